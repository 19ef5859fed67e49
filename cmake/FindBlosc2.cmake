# Finds c-blosc2 (>= 3.3) and defines the imported target Blosc2::blosc2, with
# Blosc2_VERSION and Blosc2_SOURCE (which installation was chosen, for the log).
# Order, first match wins:
#   1. a system installation through pkg-config (the shared library);
#   2. a system installation through c-blosc2's own CMake package;
#   3. the project-local prefix that scripts/setup.sh unpacks into .deps/blosc2-3.3
#      (Debian forky's libblosc2-dev). Only its static library is used, so that an
#      installed b2ndfs depends neither on the source tree nor on forky's glibc;
#      its codec libraries come from the system, and the one glibc 2.38 symbol it
#      needs is supplied by cmake/blosc2_glibc_compat.c when the C library lacks it.
# -DB2NDFS_FORCE_LOCAL_BLOSC2=ON skips 1 and 2.
include(FindPackageHandleStandardArgs)

set(_b2_min_version 3.3)
set(_b2_local "${PROJECT_SOURCE_DIR}/.deps/blosc2-3.3/usr")
set(Blosc2_SOURCE "")

if(NOT B2NDFS_FORCE_LOCAL_BLOSC2)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(_B2_PC QUIET IMPORTED_TARGET blosc2>=${_b2_min_version})
    if(_B2_PC_FOUND)
      add_library(Blosc2::blosc2 INTERFACE IMPORTED)
      target_link_libraries(Blosc2::blosc2 INTERFACE PkgConfig::_B2_PC)
      set(Blosc2_VERSION "${_B2_PC_VERSION}")
      set(Blosc2_SOURCE "system, pkg-config (${_B2_PC_LINK_LIBRARIES})")
    endif()
  endif()
endif()

if(NOT B2NDFS_FORCE_LOCAL_BLOSC2 AND NOT Blosc2_SOURCE)
  # CONFIG: c-blosc2's own Blosc2Config.cmake, never this module again. Its
  # find_dependency() calls inherit Blosc2_FIND_REQUIRED from the outer call:
  # drop it, so that a missing dependency (lz4's or zstd's CMake package) means
  # falling back below rather than a configure error.
  set(_b2_required "${Blosc2_FIND_REQUIRED}")
  set(Blosc2_FIND_REQUIRED FALSE)
  find_package(Blosc2 ${_b2_min_version} CONFIG QUIET)
  set(Blosc2_FIND_REQUIRED "${_b2_required}")
  if(Blosc2_FOUND)
    if(NOT TARGET Blosc2::blosc2)
      # Older exports define only the _shared/_static targets.
      add_library(Blosc2::blosc2 INTERFACE IMPORTED)
      if(TARGET Blosc2::blosc2_shared)
        target_link_libraries(Blosc2::blosc2 INTERFACE Blosc2::blosc2_shared)
      else()
        target_link_libraries(Blosc2::blosc2 INTERFACE Blosc2::blosc2_static)
      endif()
    endif()
    set(Blosc2_SOURCE "system, CMake package ${Blosc2_DIR}")
  endif()
endif()

if(NOT Blosc2_SOURCE)
  set(Blosc2_VERSION "")
  find_path(Blosc2_INCLUDE_DIR blosc2.h PATHS "${_b2_local}/include" NO_DEFAULT_PATH)
  find_library(Blosc2_STATIC_LIBRARY libblosc2.a
               PATHS "${_b2_local}/lib/${CMAKE_LIBRARY_ARCHITECTURE}" "${_b2_local}/lib"
               NO_DEFAULT_PATH)
  if(Blosc2_INCLUDE_DIR AND Blosc2_STATIC_LIBRARY)
    file(STRINGS "${Blosc2_INCLUDE_DIR}/blosc2.h" _b2_version_line
         REGEX "^#define BLOSC2_VERSION_STRING +\"[^\"]*\"")
    string(REGEX REPLACE ".*\"([^\"]*)\".*" "\\1" Blosc2_VERSION "${_b2_version_line}")
  endif()
  if(Blosc2_VERSION VERSION_GREATER_EQUAL _b2_min_version)
    # The codecs c-blosc2 was built with, from the system (scripts/setup.sh installs
    # them): c-blosc2 3.x adds ZFP to LZ4, Zstd and zlib.
    find_library(Blosc2_LZ4_LIBRARY lz4)
    find_library(Blosc2_ZSTD_LIBRARY zstd)
    find_library(Blosc2_ZFP_LIBRARY zfp)
    find_package(ZLIB)
    find_package(Threads REQUIRED)
    if(Blosc2_LZ4_LIBRARY AND Blosc2_ZSTD_LIBRARY AND Blosc2_ZFP_LIBRARY AND ZLIB_FOUND)
      set(_b2_deps "${Blosc2_LZ4_LIBRARY};${Blosc2_ZSTD_LIBRARY};${Blosc2_ZFP_LIBRARY};ZLIB::ZLIB")
      list(APPEND _b2_deps Threads::Threads ${CMAKE_DL_LIBS} m)

      # Forky builds against glibc 2.38, whose headers redirect strtol to
      # __isoc23_strtol (C23 also parses "0b" prefixes); older glibc lacks it.
      include(CheckFunctionExists)
      check_function_exists(__isoc23_strtol B2NDFS_HAVE_ISOC23_STRTOL)
      set(_b2_compat "")
      if(NOT B2NDFS_HAVE_ISOC23_STRTOL)
        add_library(b2ndfs_blosc2_glibc_compat STATIC
                    "${CMAKE_CURRENT_LIST_DIR}/blosc2_glibc_compat.c")
        set_target_properties(b2ndfs_blosc2_glibc_compat PROPERTIES
          POSITION_INDEPENDENT_CODE ON)
        # After libblosc2.a on the link line, so that its reference is resolved.
        list(APPEND _b2_deps b2ndfs_blosc2_glibc_compat)
        set(_b2_compat ", with a glibc compat shim")
      endif()

      add_library(Blosc2::blosc2 STATIC IMPORTED)
      set_target_properties(Blosc2::blosc2 PROPERTIES
        IMPORTED_LOCATION "${Blosc2_STATIC_LIBRARY}"
        IMPORTED_LINK_INTERFACE_LANGUAGES C
        INTERFACE_INCLUDE_DIRECTORIES "${Blosc2_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${_b2_deps}")
      set(Blosc2_SOURCE "project-local static ${Blosc2_STATIC_LIBRARY}${_b2_compat}")
    else()
      message(WARNING "c-blosc2 in ${_b2_local} needs liblz4, libzstd, libzfp and zlib "
                      "(run scripts/setup.sh)")
    endif()
  endif()
endif()

find_package_handle_standard_args(Blosc2
  REQUIRED_VARS Blosc2_SOURCE
  VERSION_VAR Blosc2_VERSION
  FAIL_MESSAGE "c-blosc2 >= ${_b2_min_version} not found: run scripts/setup.sh (or install libblosc2-dev >= ${_b2_min_version})")
