"""The ctypes mirrors of the C structs against the header the library was built from."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import pytest

import gridjit
from conftest import c_compiler, installed_header
from gridjit import _capi

# ctypes mirror -> C type name.
MIRRORS = {
    _capi.CodegenOptions: "gj_codegen_options",
    _capi.LevelInfo: "gj_level_info",
    _capi.PrecompileReport: "gj_precompile_report",
    _capi.CacheStats: "gj_cache_stats",
    _capi.CacheEntryInfo: "gj_cache_entry_info",
    _capi.RuntimeInfo: "gj_runtime_info",
    _capi.ModuleProgramInfo: "gj_module_program_info",
    _capi.ForwardDesc: "gj_forward_desc",
    _capi.BackwardDesc: "gj_backward_desc",
    _capi.BackwardBackwardDesc: "gj_backward_backward_desc",
    _capi.InitDesc: "gj_init_desc",
    _capi.NetworkLayerInfo: "gj_network_layer_info",
    _capi.NetworkPassDesc: "gj_network_pass_desc",
    _capi.NetworkInitDesc: "gj_network_init_desc",
}


def test_struct_sizes_match_what_the_init_functions_write():
    sizes = _capi.check_struct_sizes()
    assert set(sizes) == {t.__name__ for t, _ in _capi.INITIALISED_STRUCTS}
    for name, (python_size, c_size) in sizes.items():
        assert python_size == c_size, name
    assert gridjit.STRUCT_SIZES == sizes


def test_self_check_detects_a_wrong_mirror(monkeypatch):
    class Short(ctypes.Structure):  # the forward descriptor without its last field
        _fields_ = _capi.ForwardDesc._fields_[:-1]

    monkeypatch.setattr(_capi, "INITIALISED_STRUCTS", ((Short, "gj_forward_desc_init"),))
    with pytest.raises(ImportError, match="gj_forward_desc_init prepares 80 bytes but the Python mirror Short has 72"):
        _capi.check_struct_sizes()


def test_init_struct_sets_struct_size_and_defaults():
    opts = _capi.init_struct(_capi.CodegenOptions, "gj_codegen_options_init")
    assert opts.struct_size == ctypes.sizeof(_capi.CodegenOptions)
    assert opts.passes == gridjit.PASS_ALL and opts.block_size == 256 and opts.points_per_thread == 1
    assert opts.order == 0 and opts.device_functions_only == 0


def test_every_field_offset_matches_the_c_compiler(tmp_path):
    """Compiles a C program against the installed gridjit.h that prints sizeof and every
    offsetof, and compares them with the ctypes mirrors."""
    cc = c_compiler()
    header = installed_header()
    if cc is None:
        pytest.skip("no C compiler (cc, gcc or clang) to read the header's layout")
    if not header.is_file():
        pytest.skip(f"the configured header gridjit.h is not installed beside the library ({header})")
    lines = ["#include <stdio.h>", "#include <stddef.h>", f'#include "{header}"', "int main(void) {"]
    for mirror, c_name in MIRRORS.items():
        lines.append(f'    printf("{c_name} sizeof %zu\\n", sizeof({c_name}));')
        for field, _ in mirror._fields_:
            lines.append(f'    printf("{c_name} {field} %zu\\n", offsetof({c_name}, {field}));')
    lines += ["    return 0;", "}"]
    source = tmp_path / "layout.c"
    source.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-o", str(exe), str(source)], check=True, capture_output=True, text=True)
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    c_layout = {}
    for line in filter(None, printed):
        c_name, field, value = line.split()
        c_layout[(c_name, field)] = int(value)
    for mirror, c_name in MIRRORS.items():
        assert c_layout[(c_name, "sizeof")] == ctypes.sizeof(mirror), c_name
        for field, _ in mirror._fields_:
            assert c_layout[(c_name, field)] == getattr(mirror, field).offset, f"{c_name}.{field}"


def test_status_table_matches_the_library():
    for number, name in _capi.STATUS_NAMES.items():
        assert gridjit.status_name(number) == "GJ_" + name
    assert gridjit.status_name(len(_capi.STATUS_NAMES)) == "GJ_UNKNOWN_STATUS"


def test_library_location():
    assert Path(gridjit.library_path).name.startswith("libgridjit.so")
