# Convenience front end over CMake. `make demo` and `make test` are the two
# commands the README starts with.
BUILD ?= build
JOBS ?= $(shell nproc)
# Extra configure options, e.g. CMAKE_ARGS=-DVT_WERROR=ON (what CI uses)
CMAKE_ARGS ?=

.PHONY: all build deps demo test test-fast bench clean
all: build

# The Debian/Ubuntu packages the build needs (tools/install-deps.sh holds
# the list): installed with apt-get as root or with password-less sudo,
# else the one command to run is printed.
deps:
	tools/install-deps.sh

# The first configure installs what is missing first. A configure that fails
# leaves no cache behind, so the next try starts afresh (once the missing
# package is installed) instead of failing to load a build.ninja that was
# never written.
$(BUILD)/build.ninja:
	tools/install-deps.sh
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) \
		|| { rm -f $(BUILD)/CMakeCache.txt; exit 1; }

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	./samples/demo.sh $(BUILD)

test: build
	./tests/run_all.sh $(BUILD)

bench: build
	cmake --build $(BUILD) --target bench

clean:
	rm -rf $(BUILD) build-asan build-tsan
