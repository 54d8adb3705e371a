/* An application that embeds CPython late: it makes a driver call before
 * any Python is loaded (that event has no Python frames), then dlopens
 * libpython and runs a script that calls the driver through ctypes (those
 * events must have Python frames: the shim looks for CPython again after a
 * dlopen).  usage: e2e_embed LIBPYTHON SCRIPT */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: e2e_embed LIBPYTHON SCRIPT\n");
		return 2;
	}
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr ptr;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&ptr, 4096) || cuMemFree(ptr)) {
		fprintf(stderr, "e2e_embed: driver call failed\n");
		return 1;
	}
	void *py = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!py) {
		fprintf(stderr, "e2e_embed: %s\n", dlerror());
		return 1;
	}
	void (*initialize)(void) = (void (*)(void))dlsym(py, "Py_Initialize");
	int (*run)(FILE *, const char *) = (int (*)(FILE *, const char *))dlsym(py, "PyRun_SimpleFile");
	int (*finalize)(void) = (int (*)(void))dlsym(py, "Py_FinalizeEx");
	FILE *script = fopen(argv[2], "r");
	if (!initialize || !run || !finalize || !script) {
		fprintf(stderr, "e2e_embed: cannot run %s with %s\n", argv[2], argv[1]);
		return 1;
	}
	initialize();
	int rc = run(script, argv[2]);
	fclose(script);
	return finalize() || rc ? 1 : 0;
}
