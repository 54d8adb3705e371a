/* Preloaded by bench_record (before the shim) to count lock calls: every
 * pthread mutex/rwlock/spin lock and every dl_iterate_phdr (which takes the
 * loader's lock) made through the dynamic linker, by anyone. The bench runs
 * the same loop with and without the shim and reports the difference: the
 * locks the shim itself takes. vt_bench_lock_calls() reads the count. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

static unsigned long calls;

__attribute__((visibility("default"))) unsigned long vt_bench_lock_calls(void)
{
	return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}

static void *next(const char *name)
{
	return dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}

#define COUNTED(ret, name, params, args)                                          \
	__attribute__((visibility("default"))) ret name params                    \
	{                                                                         \
		static ret(*real) params;                                         \
		if (!real)                                                        \
			real = (ret(*) params)next(#name);                        \
		__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);                  \
		return real args;                                                 \
	}

COUNTED(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
COUNTED(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
COUNTED(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
COUNTED(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
COUNTED(int, pthread_spin_lock, (pthread_spinlock_t * l), (l))
COUNTED(int, dl_iterate_phdr, (int (*cb)(struct dl_phdr_info *, size_t, void *), void *data), (cb, data))
