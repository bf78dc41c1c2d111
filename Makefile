# strata: the two set-up commands are `make quickstart` and `make test`; each installs missing Debian packages and
# builds first. Everything else here is for developers.
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps build test test-slow test-all test-asan quickstart bench fuzz format clean package

all: build

deps:
	@scripts/install-deps.sh

# The developer build compiles for this machine's CPU (-march=native), as BENCHMARKS.md's figures were measured;
# the CMake default (STRATA_NATIVE=OFF) and `make package` are portable.
$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# A Debian package of the install tree (cmake/StrataPackage.cmake), from its own portable build folder (no
# -march=native, no tests): build-package/strata-dev_<version>_amd64.deb.
package: deps
	cmake -S . -B build-package -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=OFF -DSTRATA_BUILD_TESTS=OFF \
	  $(CMAKE_FLAGS)
	cmake --build build-package -j $(JOBS)
	cd build-package && cpack -G DEB

# The default suite: everything but the tests labelled "slow".
test: build
	cd $(BUILD) && ctest -LE slow --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

test-slow: build
	cd $(BUILD) && ctest -L slow --output-on-failure $(CTEST_FLAGS)

test-all: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The default suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its own build folder.
test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_NATIVE=ON -DSTRATA_SANITIZE=address,undefined \
	  -DSTRATA_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest -LE "slow|noasan" --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

quickstart: build
	@scripts/quickstart.sh $(BUILD)

bench: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_NATIVE=ON -DSTRATA_BUILD_BENCH=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

fuzz: deps
	cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_C_COMPILER=clang -DSTRATA_BUILD_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_WITH_GRPC=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j $(JOBS)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-package
