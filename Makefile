# Convenience front end over CMake. `make demo` and `make test` are the two
# commands the README starts with.
BUILD ?= build
JOBS ?= $(shell nproc)
# Extra configure options, e.g. CMAKE_ARGS=-DVT_WERROR=ON (what CI uses)
CMAKE_ARGS ?=

.PHONY: all build demo test test-fast bench clean
all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	./samples/demo.sh $(BUILD)

test: build
	./tests/run_all.sh $(BUILD)

bench: build
	cmake --build $(BUILD) --target bench

clean:
	rm -rf $(BUILD) build-asan build-tsan
