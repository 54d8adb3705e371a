# Turn a file into a C array (cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake):
# the HTML page travels inside the vramtrace binary, nothing to install.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR nbytes "${nhex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN} by embed.cmake: do not edit */\n"
  "const char ${NAME}[] = {\n${bytes}0};\n"
  "const unsigned long ${NAME}_len = ${nbytes};\n")
