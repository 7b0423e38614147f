# Helpers of the scripts that embed text files into generated C sources
# (cmake/embed_templates.cmake, examples/cmake/embed_text.cmake) and of the CMake code that
# calls them. The files become byte arrays, not string literals: literals over 4095
# characters are not portable C.

# gj_embed_bytes(PATH BYTES_VAR SIZE_VAR): the bytes of the file PATH as the text of a C
# initialiser, "0xNN," each, 16 to a line with the lines after the first indented by two
# spaces (the caller puts the first line's indentation and the terminating 0x00), and
# their number.
function(gj_embed_bytes path bytes_var size_var)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR n_bytes "${hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # 16 bytes per line keeps the generated file diffable.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n  " bytes "${bytes}")
  set(${bytes_var} "${bytes}" PARENT_SCOPE)
  set(${size_var} ${n_bytes} PARENT_SCOPE)
endfunction()

# gj_write_if_changed(FILE CONTENT): writes CONTENT to FILE unless FILE already holds it,
# so that what is compiled from FILE is rebuilt only when it changed.
function(gj_write_if_changed file content)
  file(WRITE "${file}.tmp" "${content}")
  file(COPY_FILE "${file}.tmp" "${file}" ONLY_IF_DIFFERENT)
  file(REMOVE "${file}.tmp")
endfunction()

# gj_embed_split(PAIR SYMBOL_VAR FILE_VAR): SYMBOL and FILE of a "SYMBOL=FILE" pair (FILE
# may hold further '=').
function(gj_embed_split pair symbol_var file_var)
  string(FIND "${pair}" "=" eq)
  string(SUBSTRING "${pair}" 0 ${eq} symbol)
  math(EXPR start "${eq} + 1")
  string(SUBSTRING "${pair}" ${start} -1 file)
  set(${symbol_var} "${symbol}" PARENT_SCOPE)
  set(${file_var} "${file}" PARENT_SCOPE)
endfunction()
