/* dlopen by bare name, found only through this program's own RUNPATH/RPATH
 * ($ORIGIN/rpath_lib). Under the shim the real dlopen sees the shim as its
 * caller; the wrapper must still honour the program's search path.
 * Exit 0 when the library loads and its function answers. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdint.h>

int main(void)
{
	void *h = dlopen("libvt_stacks_rp.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "rpath_client: %s\n", dlerror());
		return 1;
	}
	void *fn = dlsym(h, "dl_lib_site");
	if (!fn) {
		fprintf(stderr, "rpath_client: no dl_lib_site\n");
		return 1;
	}
	/* a failing bare-name dlopen still fails, with the loader's message */
	if (dlopen("libvt_no_such_lib.so", RTLD_NOW) || !dlerror())
		return 1;
	return dlclose(h) == 0 ? 0 : 1;
}
