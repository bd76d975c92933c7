# Writes OUT, a C file holding every file of DIR but README.md as a
# NUL-terminated byte array, and the table `templates_builtin_files` that
# templates.c searches. Run by the build (cmake -DDIR=... -DOUT=... -P this)
# whenever a template changes.
cmake_minimum_required(VERSION 3.18)
if(NOT DIR OR NOT OUT)
  message(FATAL_ERROR "usage: cmake -DDIR=templates -DOUT=file.c -P embed-templates.cmake")
endif()

file(GLOB files LIST_DIRECTORIES false RELATIVE ${DIR} ${DIR}/*)
list(REMOVE_ITEM files README.md)
list(SORT files)

set(arrays "")
set(rows "")
set(i 0)
foreach(name ${files})
  if(NOT name MATCHES "^[A-Za-z0-9_][A-Za-z0-9._-]*$")
    message(FATAL_ERROR "${DIR}/${name}: a template's name may hold only letters, digits, '.', '_' and '-'")
  endif()
  file(READ ${DIR}/${name} hex HEX)
  file(SIZE ${DIR}/${name} size)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # Sixteen bytes a line keeps the generated file readable (CMake's regular
  # expressions have no {16}).
  string(REPEAT "0x[0-9a-f][0-9a-f]," 16 line)
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  string(APPEND arrays "/* ${name} */\nstatic const unsigned char t${i}[] = {\n    ${bytes}0x00};\n\n")
  string(APPEND rows "    {\"${name}\", (const char *)t${i}, ${size}},\n")
  math(EXPR i "${i} + 1")
endforeach()

if(i EQUAL 0)
  set(rows "    {0},\n") # C has no empty arrays; the count says there is nothing
endif()
set(text "/* Generated from templates/ by scripts/embed-templates.cmake: do not edit. */
#include \"templates.h\"

${arrays}const struct templates_file templates_builtin_files[] = {
${rows}};
const size_t templates_builtin_count = ${i};
")
file(WRITE ${OUT} "${text}")
