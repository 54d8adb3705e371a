/* dlsym(RTLD_NEXT, ...) from libraries resolves relative to the CALLING
 * library, with or without the shim preloaded; names only the shim exports
 * are not found while nothing else defines them. Prints every answer (the test
 * script compares the output of a plain and a preloaded run) and fails on
 * the answers that are fixed by the ELF rules. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void *vt_next_from_a(const char *name);
void *vt_next_from_b(const char *name);
const char *vt_next_probe(void);

/* only the executable defines this one */
const char *vt_only_in_exe(void) { return "exe"; }

typedef const char *(*probe_fn)(void);

static const char *probe_name(void *fn) { return fn ? ((probe_fn)fn)() : "(null)"; }

static int check(const char *what, int ok)
{
	printf("%-48s %s\n", what, ok ? "ok" : "WRONG");
	return !ok;
}

int main(int argc, char **argv)
{
	int bad = 0;
	void *libc_getpid = dlsym(RTLD_DEFAULT, "getpid");
	printf("first vt_next_probe: %s\n", vt_next_probe());
	printf("next after a: %s\n", probe_name(vt_next_from_a("vt_next_probe")));
	printf("next after b: %s\n", probe_name(vt_next_from_b("vt_next_probe")));
	bad |= check("next vt_next_probe after a is b's", !strcmp(probe_name(vt_next_from_a("vt_next_probe")), "b"));
	bad |= check("nothing after b defines vt_next_probe", vt_next_from_b("vt_next_probe") == NULL);
	bad |= check("dlerror() says why", vt_next_from_b("vt_next_probe") == NULL && dlerror() != NULL);
	bad |= check("getpid after a is libc's", vt_next_from_a("getpid") == libc_getpid);
	bad |= check("the executable is before a", vt_next_from_a("vt_only_in_exe") == NULL);
	bad |= check("next from the executable is a's probe",
		     !strcmp(probe_name(dlsym(RTLD_NEXT, "vt_next_probe")), "a"));

	/* no driver and no runtime loaded: their names are not found, even
	 * though the preloaded shim exports wrappers under them */
	bad |= check("no driver: cuMemAlloc_v2 not found", !dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") && dlerror());
	bad |= check("no driver: cuGetProcAddress_v2 not found", !dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"));
	bad |= check("no runtime: cudaMalloc not found", !dlsym(RTLD_DEFAULT, "cudaMalloc") && dlerror());

	const char *local_path = argc > 1 ? argv[1] : "libvt_next_local.so";
	void *local = dlopen(local_path, RTLD_NOW | RTLD_LOCAL);
	if (!local) {
		printf("dlopen %s: %s\n", local_path, dlerror());
		return 1;
	}
	void *(*from_local)(const char *) = (void *(*)(const char *))dlsym(local, "vt_next_from_local");
	bad |= check("getpid after a local object is libc's", from_local && from_local("getpid") == libc_getpid);
	printf("next probe after local: %s\n", probe_name(from_local ? from_local("vt_next_probe") : NULL));
	printf("pid lookups consistent: %d\n", getpid() == ((pid_t(*)(void))libc_getpid)());
	dlclose(local);
	return bad;
}
