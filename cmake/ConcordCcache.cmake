# Compiles through ccache when it is installed (CONCORD_CCACHE=ON, the default) and no
# launcher was given. CCACHE_BASEDIR is the source tree and the working directory is left
# out of the hash, so every build directory one level below a checkout (build/, build-asan/,
# build-tsan/, build-pip/) of any clone shares the cache: CI's clean clone reuses what a
# developer compiled on the same machine, and install.pip_venv's build reuses the main
# build's objects (docs/troubleshooting.md, "CI time").
option(CONCORD_CCACHE "Compile through ccache when it is installed" ON)
find_program(CONCORD_CCACHE_PROGRAM ccache)
if(CONCORD_CCACHE AND CONCORD_CCACHE_PROGRAM AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(_concord_launcher env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${CONCORD_CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_concord_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${_concord_launcher})
endif()
