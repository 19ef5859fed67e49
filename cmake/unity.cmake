# b2ndfs_unity_batches(): the unity build of B2NDFS_UNITY (CMakeLists.txt
# says why), done here rather than by CMake's UNITY_BUILD, whose batches
# #include each source by its absolute path: the compiler cache then serves a
# tree only to a clone at the same path. These batches include each source by
# its path relative to the batch, and the cache's base directory
# (scripts/lib/ccache.sh) makes the compiler's own paths relative: a fresh
# clone anywhere hits the objects of another.
# Every C++ target of the project is batched, B2NDFS_UNITY_BATCH sources a
# batch in the order the target lists them, but a target whose UNITY_BUILD
# property is set OFF and a source whose SKIP_UNITY_BUILD_INCLUSION is set
# (they compile alone). Call it once, after every target is defined.

function(_b2ndfs_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _b2ndfs_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_b2ndfs_unity_target target)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
    return()
  endif()
  get_target_property(unity ${target} UNITY_BUILD)
  if(DEFINED unity AND NOT unity STREQUAL "unity-NOTFOUND" AND NOT unity)
    return()  # set OFF where the target is defined
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  set(kept "")
  set(batched "")
  foreach(src IN LISTS sources)
    set(alone TRUE)
    if(src MATCHES "\\.(cc|cpp|cxx)$" AND NOT src MATCHES "\\$<")
      get_filename_component(path "${src}" ABSOLUTE BASE_DIR "${source_dir}")
      get_property(skip SOURCE "${path}" TARGET_DIRECTORY ${target}
                   PROPERTY SKIP_UNITY_BUILD_INCLUSION)
      get_property(generated SOURCE "${path}" TARGET_DIRECTORY ${target} PROPERTY GENERATED)
      if(NOT skip AND NOT generated)
        list(APPEND batched "${path}")
        set(alone FALSE)
      endif()
    endif()
    if(alone)
      list(APPEND kept "${src}")
    endif()
  endforeach()
  list(LENGTH batched count)
  if(count LESS 2)
    return()
  endif()
  set(dir "${binary_dir}/unity/${target}")
  set(index 0)
  set(content "")
  set(in_batch 0)
  set(batch_files "")
  foreach(path IN LISTS batched)
    file(RELATIVE_PATH relative "${dir}" "${path}")
    string(APPEND content "#include \"${relative}\"\n")
    math(EXPR in_batch "${in_batch} + 1")
    if(in_batch EQUAL B2NDFS_UNITY_BATCH)
      file(CONFIGURE OUTPUT "${dir}/batch_${index}.cc" CONTENT "${content}" @ONLY)
      list(APPEND batch_files "${dir}/batch_${index}.cc")
      math(EXPR index "${index} + 1")
      set(content "")
      set(in_batch 0)
    endif()
  endforeach()
  if(in_batch GREATER 0)
    file(CONFIGURE OUTPUT "${dir}/batch_${index}.cc" CONTENT "${content}" @ONLY)
    list(APPEND batch_files "${dir}/batch_${index}.cc")
  endif()
  # The batched sources leave the target's list (the compiler's dependency
  # files track them). Not HEADER_FILE_ONLY: a source's properties belong to
  # its directory, and another target there may compile the same file alone.
  set_property(TARGET ${target} PROPERTY SOURCES ${kept} ${batch_files})
endfunction()

function(b2ndfs_unity_batches)
  _b2ndfs_targets_below("${PROJECT_SOURCE_DIR}" targets)
  foreach(target IN LISTS targets)
    _b2ndfs_unity_target(${target})
  endforeach()
endfunction()
