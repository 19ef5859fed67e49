# Finds c-blosc2 and defines the imported target Blosc2::blosc2.
# Order: a system installation (pkg-config), then the project-local prefix that
# scripts/setup.sh unpacks into .deps/blosc2 (linked statically there, so that an
# installed b2ndfs does not depend on the source tree).
include(FindPackageHandleStandardArgs)

set(_b2_local "${PROJECT_SOURCE_DIR}/.deps/blosc2/usr")
set(Blosc2_FOUND FALSE)

if(NOT B2NDFS_FORCE_LOCAL_BLOSC2)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(_B2_PC QUIET IMPORTED_TARGET blosc2>=2.10)
    if(_B2_PC_FOUND)
      add_library(Blosc2::blosc2 INTERFACE IMPORTED)
      target_link_libraries(Blosc2::blosc2 INTERFACE PkgConfig::_B2_PC)
      set(Blosc2_VERSION "${_B2_PC_VERSION}")
      set(Blosc2_SOURCE "system (pkg-config)")
      set(Blosc2_FOUND TRUE)
    endif()
  endif()
endif()

if(NOT Blosc2_FOUND)
  find_path(Blosc2_INCLUDE_DIR b2nd.h PATHS "${_b2_local}/include" NO_DEFAULT_PATH)
  find_library(Blosc2_STATIC_LIBRARY libblosc2.a
               PATHS "${_b2_local}/lib/${CMAKE_LIBRARY_ARCHITECTURE}" "${_b2_local}/lib"
               NO_DEFAULT_PATH)
  if(Blosc2_INCLUDE_DIR AND Blosc2_STATIC_LIBRARY)
    find_library(_b2_lz4 lz4 REQUIRED)
    find_library(_b2_zstd zstd REQUIRED)
    find_package(ZLIB REQUIRED)
    find_package(Threads REQUIRED)
    add_library(Blosc2::blosc2 STATIC IMPORTED)
    set_target_properties(Blosc2::blosc2 PROPERTIES
      IMPORTED_LOCATION "${Blosc2_STATIC_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${Blosc2_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${_b2_lz4};${_b2_zstd};ZLIB::ZLIB;Threads::Threads;m")
    set(Blosc2_SOURCE "project-local ${_b2_local}")
    set(Blosc2_FOUND TRUE)
  endif()
endif()

find_package_handle_standard_args(Blosc2
  REQUIRED_VARS Blosc2_SOURCE
  FAIL_MESSAGE "c-blosc2 not found: run scripts/setup.sh (or install libblosc2-dev >= 2.10)")
