# cmake -DAR=ar -DOUTPUT=merged.a -DINPUTS="a.a;b.a" -P merge_archives.cmake
# One static archive holding the members of all INPUTS (GNU ar's MRI script), so that a static
# libyolo12 carries the CUDA runtime's objects and its users need no CUDA toolkit to link it.
get_filename_component(dir ${OUTPUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
file(REMOVE ${OUTPUT})
set(script "create ${OUTPUT}\n")
foreach(input ${INPUTS})
  string(APPEND script "addlib ${input}\n")
endforeach()
string(APPEND script "save\nend\n")
file(WRITE ${OUTPUT}.mri ${script})
execute_process(COMMAND ${AR} -M INPUT_FILE ${OUTPUT}.mri RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merging ${INPUTS} into ${OUTPUT} failed: ${err}")
endif()
