/* The exec family: the log of this image is marked EXECED just before the
 * image is replaced (the new image, preloaded again through the inherited
 * environment, writes the next log of the same pid), and back to running if
 * exec fails. glibc's exec* functions call execve internally, not through
 * the PLT, so each is wrapped; the execl* forms are turned into their execv*
 * twin with the argument list on the stack (no malloc). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#include "log_writer.h"
#include "routing.h" /* vt_next_symbol */
#include "shim.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static void *real_of(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);
	if (!p) {
		p = vt_next_symbol(name);
		atomic_store_explicit(slot, p, memory_order_release);
	}
	return p;
}
#define REAL(type, name)                                                                                      \
	({                                                                                                    \
		static _Atomic(void *) slot_;                                                                 \
		(type) real_of(&slot_, name);                                                                 \
	})

/* exec only returns on failure: undo the mark, keep exec's errno */
static int exec_returned(int result)
{
	int saved_errno = errno;
	vt_log_exec_failed();
	errno = saved_errno;
	return result;
}

VT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn real = REAL(execve_fn, "execve");
	if (!real)
		return errno = ENOSYS, -1;
	vt_log_before_exec();
	return exec_returned(real(path, argv, envp));
}

VT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn real = REAL(execve_fn, "execvpe");
	if (!real)
		return errno = ENOSYS, -1;
	vt_log_before_exec();
	return exec_returned(real(file, argv, envp));
}

VT_EXPORT int execv(const char *path, char *const argv[])
{
	execv_fn real = REAL(execv_fn, "execv");
	if (!real)
		return errno = ENOSYS, -1;
	vt_log_before_exec();
	return exec_returned(real(path, argv));
}

VT_EXPORT int execvp(const char *file, char *const argv[])
{
	execv_fn real = REAL(execv_fn, "execvp");
	if (!real)
		return errno = ENOSYS, -1;
	vt_log_before_exec();
	return exec_returned(real(file, argv));
}

VT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	fexecve_fn real = REAL(fexecve_fn, "fexecve");
	if (!real)
		return errno = ENOSYS, -1;
	vt_log_before_exec();
	return exec_returned(real(fd, argv, envp));
}

/* Count the variadic list (up to its NULL). */
static size_t count_args(const char *arg0, va_list ap)
{
	size_t n = 1;
	if (!arg0)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

/* Build argv[] (n + 1 slots) from arg0 and the list. */
static void fill_args(char **argv, size_t n, const char *arg0, va_list ap)
{
	if (n)
		argv[0] = (char *)arg0;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	argv[n] = NULL;
}

#define VT_EXECL_BODY(first, arg0, call)                                                                      \
	va_list ap;                                                                                           \
	va_start(ap, arg0);                                                                                   \
	size_t n = count_args(arg0, ap);                                                                      \
	va_end(ap);                                                                                           \
	char *argv[n + 1];                                                                                    \
	va_start(ap, arg0);                                                                                   \
	fill_args(argv, n, arg0, ap);                                                                         \
	if (n)                                                                                                \
		(void)va_arg(ap, char *); /* the terminating NULL */                                          \
	call;                                                                                                 \
	va_end(ap)

VT_EXPORT int execl(const char *path, const char *arg0, ...)
{
	int r;
	VT_EXECL_BODY(path, arg0, r = execv(path, argv));
	return r;
}

VT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	int r;
	VT_EXECL_BODY(file, arg0, r = execvp(file, argv));
	return r;
}

VT_EXPORT int execle(const char *path, const char *arg0, ...)
{
	int r;
	VT_EXECL_BODY(path, arg0, char *const *envp = va_arg(ap, char *const *); r = execve(path, argv, envp));
	return r;
}
