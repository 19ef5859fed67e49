# ctest fuzz.corpus (FIXTURES_SETUP fuzz_corpus):
#   cmake -DFIXTURE=b2nd_fixture -DTOOL=fuzz_corpus_tool -DWORKDIR=dir -P corpus_setup.cmake
# Writes what the fuzz.replay.* tests replay besides the committed corpus:
#   WORKDIR/valid/    `b2nd_fixture make` (every valid container kind)
#   WORKDIR/hostile/  `b2nd_fixture hostile` (broken containers)
#   WORKDIR/derived/  metalayers and sparse packs cut out of both
#                     (`fuzz_corpus_tool prepare`)
if(NOT FIXTURE OR NOT TOOL OR NOT WORKDIR)
  message(FATAL_ERROR "usage: cmake -DFIXTURE=... -DTOOL=... -DWORKDIR=... -P corpus_setup.cmake")
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}${err}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORKDIR}")
run("${FIXTURE}" make "${WORKDIR}/valid" "${WORKDIR}/ref")
run("${FIXTURE}" hostile "${WORKDIR}/hostile" --manifest "${WORKDIR}/hostile.tsv")
run("${TOOL}" prepare "${WORKDIR}/derived" "${WORKDIR}/valid" "${WORKDIR}/hostile")

file(GLOB_RECURSE valid_files "${WORKDIR}/valid/*")
file(GLOB_RECURSE hostile_files "${WORKDIR}/hostile/*")
list(LENGTH valid_files nvalid)
list(LENGTH hostile_files nhostile)
if(nvalid LESS 60 OR nhostile LESS 20)
  message(FATAL_ERROR "too few fixtures: ${nvalid} valid files, ${nhostile} hostile files")
endif()
message(STATUS "fuzz corpus: ${nvalid} valid and ${nhostile} hostile files in ${WORKDIR}")
