"""The bindings gridjit.torch builds on: a configuration parsed with unknown keys skipped
(gj_encoding_create_ex) and the code-generation option gradients_fp32. Needs no GPU."""

from __future__ import annotations

import pytest

import gridjit
from gridjit import _capi


def test_unknown_keys_are_skipped_and_reported():
    config = {"otype": "HashGrid", "n_levls": 4, "n_levels": 3, "nested": {"a": 1}, "log2_hashmap_size": 12}
    enc = gridjit.Encoding(config, 2, ignore_unknown_keys=True)
    assert enc.n_levels == 3 and enc.log2_hashmap_size == 12
    assert len(enc.ignored_keys) == 2, enc.ignored_keys
    assert any("'n_levls'" in m and "did you mean 'n_levels'" in m for m in enc.ignored_keys)
    assert any("'nested'" in m for m in enc.ignored_keys)
    strict = gridjit.Encoding({"otype": "HashGrid", "n_levels": 3, "log2_hashmap_size": 12}, 2)
    assert strict.ignored_keys == [] and strict.hyperparams == enc.hyperparams


def test_nothing_ignored_gives_an_empty_list():
    enc = gridjit.Encoding({"otype": "DenseGrid", "n_levels": 2}, 2, ignore_unknown_keys=True)
    assert enc.ignored_keys == []


def test_known_keys_with_bad_values_still_fail():
    with pytest.raises(gridjit.InvalidConfigError, match="n_levels") as info:
        gridjit.Encoding({"otype": "HashGrid", "n_levels": "many", "junk": 1}, 2, ignore_unknown_keys=True)
    assert info.value.call == "gj_encoding_create_ex"
    with pytest.raises(gridjit.InvalidConfigError, match="junk"):
        gridjit.Encoding({"otype": "HashGrid", "junk": 1}, 2)


def test_gradients_fp32_option_changes_the_generated_code():
    enc = gridjit.Encoding({"otype": "HashGrid", "n_levels": 2, "precision": "fp16"}, 2)
    default = enc.generate()
    fp32 = enc.generate(gradients_fp32=True)
    assert fp32 != default
    assert gridjit.CodegenOptions(gradients_fp32=True).to_struct().gradients_fp32 == 1
    assert _capi.init_struct(_capi.CodegenOptions, "gj_codegen_options_init").gradients_fp32 == 0


def test_gradient_element_size_of_a_null_module_is_zero():
    assert _capi.lib.gj_module_gradient_element_size(None) == 0
