# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): a package is installed on other machines, so it must not come from
# a build compiled for this machine's CPU. `make package` configures a portable build folder (build-package).
if(CPACK_STRATA_NATIVE)
  message(FATAL_ERROR "strata: this build folder was configured with -DSTRATA_NATIVE=ON (-march=native), so its "
                      "binaries may not run on other CPUs; package a portable build instead: `make package`, or "
                      "configure with -DSTRATA_NATIVE=OFF")
endif()
