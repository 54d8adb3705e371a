/* `vramtrace run [-o DIR] [--per-tensor] [--stack-depth N] [--free-stacks] [--stack-memo MODE]
 * [--max-size SIZE]
 *                [--shm] -- CMD ARGS...`
 *
 * Runs CMD with libvramtrace.so preloaded and the trace directory in its
 * environment, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2/SIGALRM, waits, records how
 * the job ended in DIR/run.json, prints one summary line and exits with the job's exit code (128 +
 * signal if it was killed).
 *
 * The launcher is a pipeline of small stages over one struct run_job:
 * parse -> find the shim -> make the directory -> environment -> spawn ->
 * wait -> collect (--shm) -> symbol sidecar -> run.json -> summary. A later stage that watches
 * the job's stderr (framework OOM messages) slots in beside spawn/wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cli.h"
#include "json_out.h"
#include "log_reader.h"
#include "trace_dir.h"
#include "recording_cost.h"
#include "run_collect.h"   /* --shm logs into the trace */
#include "run_lock.h"      /* one launcher per trace directory */
#include "run_out_name.h"  /* -o placeholders: %h, %p, %q{RANK} */
#include "run_relay.h"     /* the job's stderr through the launcher */
#include "run_summary.h"   /* the short answer when the job ends */
#include "sidecar_write.h" /* names resolved on this host, so the trace reads the same elsewhere */
#include "vramtrace/size_text.h"

struct run_job {
	/* options */
	const char *out_dir; /* -o */
	int per_tensor;
	const char *stack_depth; /* validated text, passed through */
	const char *max_size;    /* validated text, passed through */
	int use_shm;
	int free_stacks;        /* --free-stacks: unwind frees too */
	const char *stack_memo; /* --stack-memo on|off|verify, validated */
	int simulated_driver;   /* --simulated-driver: the job on tests/simdriver's libcuda.so.1 */
	char **cmd;             /* argv of the job */
	/* derived */
	char shim[PATH_MAX];
	char dir[PATH_MAX];     /* the trace, absolute */
	char log_dir[PATH_MAX]; /* where the shim writes (dir, or /dev/shm) */
	uint64_t start_ns;      /* CLOCK_REALTIME */
	/* outcome */
	pid_t pid;
	int status;     /* waitpid status */
	int exit_code;  /* what `run` exits with */
	int exec_errno; /* the command could not be run (not found: ENOENT) */
	int made_dir;   /* the trace directory is ours to remove */
};

static const struct vt_cli_option run_options[] = {
    {"-o", "DIR",
     "the trace directory (default vramtrace-CMD-DATE-TIME here); %h host, %p pid, "
     "%q{VAR} a variable (-o job/rank%q{RANK})"},
    {"--per-tensor", NULL, "one driver allocation per tensor (PyTorch, TensorFlow, JAX)"},
    {"--stack-depth", "N", "native frames kept per stack, 0..512 (default 128; 0: no stacks)"},
    {"--free-stacks", NULL, "frees carry their own stack too"},
    {"--stack-memo", "on|off|verify", "the stack memo (default on; verify: unwind every hit too)"},
    {"--max-size", "SIZE", "log size cap per process, e.g. 512M (past it: marked truncated)"},
    {"--shm", NULL, "write the logs in /dev/shm, moved into DIR when the job ends"},
    {"--simulated-driver", NULL, "run CMD on the simulated CUDA driver (no GPU needed)"},
    {NULL, NULL, NULL},
};

static const struct vt_cli_help run_help = {
    "run", "-- CMD [ARGS...]",
    "Run CMD with its CUDA driver calls recorded into a trace directory.", run_options,
    "exit: the job's exit code (128+signal if it was killed); 127 when CMD is not found,\n"
    "126 when it cannot be run; 2 for a usage error or when the trace cannot be set up.\n"};

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- options ----------------------------------------------------------- */

static int valid_count(const char *s)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	return *s && !*end && !errno && v <= VT_MAX_FRAMES; /* what capture can store */
}

static int run_option(void *ctx, const struct vt_cli_option *o, const char *v)
{
	struct run_job *job = ctx;
	uint64_t bytes;
	if (!strcmp(o->name, "--per-tensor"))
		job->per_tensor = 1;
	else if (!strcmp(o->name, "--shm"))
		job->use_shm = 1;
	else if (!strcmp(o->name, "--free-stacks"))
		job->free_stacks = 1;
	else if (!strcmp(o->name, "--simulated-driver"))
		job->simulated_driver = 1;
	else if (!strcmp(o->name, "-o"))
		job->out_dir = v;
	else if (!strcmp(o->name, "--stack-memo") && strcmp(v, "on") && strcmp(v, "off") &&
	         strcmp(v, "verify"))
		return vt_cli_usage_error("run", "--stack-memo wants on, off or verify, not '%s'",
		                          v);
	else if (!strcmp(o->name, "--stack-memo"))
		job->stack_memo = v;
	else if (!strcmp(o->name, "--stack-depth") && !valid_count(v))
		return vt_cli_usage_error("run", "--stack-depth wants 0..512, not '%s'", v);
	else if (!strcmp(o->name, "--stack-depth"))
		job->stack_depth = v;
	else if (vt_parse_size(v, &bytes)) /* --max-size */
		return vt_cli_usage_error("run", "--max-size wants a size like 512M, not '%s'", v);
	else
		job->max_size = v;
	return 0;
}

/* 0, VT_CLI_HELP_SHOWN or an exit code; job->cmd: the job's argv. */
static int parse_options(struct run_job *job, int argc, char **argv)
{
	const struct vt_cli_parser parser = {&run_help, run_option, NULL, 1};
	int next, rc = vt_cli_parse(&parser, argc, argv, job, &next);
	if (rc)
		return rc;
	if (next >= argc)
		return vt_cli_usage_error("run",
		                          "no command to run (vramtrace run [options] -- CMD)");
	job->cmd = argv + next;
	return 0;
}

/* ---- the shim ---------------------------------------------------------- */

/* ../lib/libvramtrace.so from the running executable: the build tree (bin/,
 * lib/) and an install prefix have the same layout. */
static int find_shim(struct run_job *job)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		fprintf(stderr, "vramtrace run: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	char candidate[PATH_MAX + 32];
	snprintf(candidate, sizeof candidate, "%s/../lib/libvramtrace.so", exe);
	if (!realpath(candidate, job->shim) || access(job->shim, R_OK)) {
		fprintf(stderr,
		        "vramtrace run: shim not found at %s (install bin/ and lib/ together)\n",
		        candidate);
		return -1;
	}
	return 0;
}

/* ---- the trace directory ----------------------------------------------- */

static void default_dir_name(const struct run_job *job, char *out, size_t len)
{
	const char *name = strrchr(job->cmd[0], '/');
	name = name ? name + 1 : job->cmd[0];
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	/* ranks of one launcher start within the same second: each its own */
	long rank = vt_run_env_rank();
	char rank_part[32] = "";
	if (rank >= 0)
		snprintf(rank_part, sizeof rank_part, "-rank%ld", rank);
	snprintf(out, len, "vramtrace-%.64s-%s%s", *name ? name : "job", stamp, rank_part);
	for (char *c = out; *c; c++) /* a command name never makes a path */
		if (*c == '/' || *c == ' ')
			*c = '_';
}

/* The folders above the trace directory, as `mkdir -p` makes them: ranks
 * writing job/rank0, job/rank1 ... at once all find or make job/. */
static int make_parents(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *s = buf + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST) {
			fprintf(stderr, "vramtrace run: cannot create %s: %s\n", buf, strerror(errno));
			return -1;
		}
		*s = '/';
	}
	return 0;
}

/* An existing directory the trace may go into: ours, not a symlink, not
 * writable by anyone else (who could plant, swap or remove the trace's
 * files), and holding no trace yet. An empty
 * directory writable by others is refused too rather than chmod'ed: someone
 * could write into it between the check and the chmod. */
static int accept_existing_dir(const char *path)
{
	struct stat st;
	if (lstat(path, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		fprintf(stderr, "vramtrace run: cannot create trace directory %s: %s\n", path,
		        "exists and is not a directory of this user");
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		fprintf(stderr,
		        "vramtrace run: %s is writable by other users (mode %04o); "
		        "`chmod go-w` it or choose another -o\n",
		        path, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	if (vt_run_dir_holds_trace(path)) {
		fprintf(stderr,
		        "vramtrace run: %s already holds a trace; choose another -o or remove it\n",
		        path);
		return -1;
	}
	return 0;
}

/* Create `path` 0700, or accept an existing directory (accept_existing_dir). */
static int make_private_dir(const char *path, int *made)
{
	*made = 0;
	if (!mkdir(path, 0700))
		return *made = 1, 0;
	if (errno == EEXIST)
		return accept_existing_dir(path);
	fprintf(stderr, "vramtrace run: cannot create trace directory %s: %s\n", path,
	        strerror(errno));
	return -1;
}

/* The longest name put into the trace directory: "/vramtrace.<pid>.<n>.log"
 * with 10-digit numbers, "/.symbols.vtsym.XXXXXX", "/.run.json.tmp". */
#define LONGEST_NAME_IN_DIR 40

/* Does every file of the trace get a path the system can open? Near
 * PATH_MAX the shim's logs could still be written while run.json, the
 * sidecar and `report` could not reach them: refused up front instead. */
static int dir_path_fits(const char *name)
{
	char cwd[PATH_MAX];
	size_t len = strlen(name);
	if (name[0] != '/')
		len += getcwd(cwd, sizeof cwd) ? strlen(cwd) + 1 : PATH_MAX;
	if (len + LONGEST_NAME_IN_DIR < PATH_MAX)
		return 1;
	fprintf(stderr,
	        "vramtrace run: the trace directory's path is too long (%zu bytes, absolute; "
	        "at most %d): choose a shorter -o\n",
	        len, PATH_MAX - 1 - LONGEST_NAME_IN_DIR);
	return 0;
}

static int make_dirs(struct run_job *job)
{
	char name[PATH_MAX], err[512];
	if (job->out_dir && vt_run_out_name(job->out_dir, name, sizeof name, err, sizeof err)) {
		fprintf(stderr, "vramtrace run: %s\n", err);
		return -1;
	}
	if (!job->out_dir)
		default_dir_name(job, name, sizeof name);
	if (!dir_path_fits(name) || make_parents(name) || make_private_dir(name, &job->made_dir))
		return -1;
	if (!realpath(name, job->dir)) {
		fprintf(stderr, "vramtrace run: cannot resolve %s: %s\n", name, strerror(errno));
		return -1;
	}
	if (vt_run_lock_dir(job->dir))
		return -1;
	snprintf(job->log_dir, sizeof job->log_dir, "%s", job->dir);
	if (job->use_shm) {
		const char *base = strrchr(job->dir, '/');
		snprintf(job->log_dir, sizeof job->log_dir, "/dev/shm/%s.%d",
		         base ? base + 1 : "vramtrace", (int)getpid());
		int made_log_dir;
		if (make_private_dir(job->log_dir, &made_log_dir))
			return -1;
	}
	return 0;
}

/* ---- environment ------------------------------------------------------- */

static int set_env(const char *name, const char *value)
{
	if (setenv(name, value, 1)) {
		fprintf(stderr, "vramtrace run: cannot set %s: %s\n", name, strerror(errno));
		return -1;
	}
	return 0;
}

/* --simulated-driver: the folder of the simulated libcuda.so.1 beside the
 * command, lib/simdriver in an install prefix or the Python package,
 * tests/simdriver in the build tree. Only when asked: a job must never run
 * on it by accident. */
static int find_simulated_driver(const struct run_job *job, char *out, size_t len)
{
	static const char *const places[] = {"simdriver", "../tests/simdriver"};
	char lib_dir[PATH_MAX];
	snprintf(lib_dir, sizeof lib_dir, "%s", job->shim); /* .../lib/libvramtrace.so */
	char *slash = strrchr(lib_dir, '/');
	if (slash)
		*slash = 0;
	for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
		char candidate[PATH_MAX * 2];
		snprintf(candidate, sizeof candidate, "%s/%s/libcuda.so.1", lib_dir, places[i]);
		if (access(candidate, R_OK) == 0 && realpath(candidate, out) && strlen(out) < len) {
			*strrchr(out, '/') = 0;
			return 0;
		}
	}
	fprintf(stderr,
	        "vramtrace run: no simulated driver beside %s (lib/simdriver/libcuda.so.1; an "
	        "install needs -DVT_INSTALL_SIMDRIVER=ON)\n",
	        lib_dir);
	return -1;
}

/* The job finds the simulated libcuda.so.1 first on its library path. */
static int use_simulated_driver(const struct run_job *job)
{
	char dir[PATH_MAX];
	if (find_simulated_driver(job, dir, sizeof dir))
		return -1;
	const char *old = getenv("LD_LIBRARY_PATH");
	size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *path = malloc(len);
	if (!path)
		return -1;
	snprintf(path, len, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
	int rc = set_env("LD_LIBRARY_PATH", path);
	free(path);
	fprintf(stderr,
	        "vramtrace run: on the simulated CUDA driver (%s/libcuda.so.1): no GPU is used\n",
	        dir);
	return rc;
}

/* A sanitizer runtime must stay the first preloaded object (ASan checks). */
static int is_sanitizer_runtime(const char *entry, size_t len)
{
	static const char *const names[] = {"libasan", "libtsan", "libubsan",    "libhwasan",
	                                    "libmsan", "liblsan", "libclang_rt."};
	const char *base = entry;
	for (size_t i = 0; i < len; i++)
		if (entry[i] == '/')
			base = entry + i + 1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return 1;
	return 0;
}

/* LD_PRELOAD for the job: sanitizer runtimes already there, the shim (first
 * of the rest, so its dlsym and driver symbols win), then everything else
 * that was there. Entries are separated by ':' or spaces. */
static char *compose_preload(const char *shim, const char *old)
{
	size_t len = strlen(shim) + (old ? strlen(old) : 0) + 2;
	char *out = malloc(len), *p = out;
	if (!out)
		return NULL;
	*p = 0;
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			p += sprintf(p, "%s%s", p == out ? "" : ":", shim);
			continue;
		}
		for (const char *e = old ? old : ""; *e;) {
			size_t n = strcspn(e, ": ");
			if (n && is_sanitizer_runtime(e, n) == (pass == 0))
				p += sprintf(p, "%s%.*s", p == out ? "" : ":", (int)n, e);
			e += n + (e[n] != 0);
		}
	}
	return out;
}

static int prepare_env(const struct run_job *job)
{
	char *preload = compose_preload(job->shim, getenv("LD_PRELOAD"));
	if (!preload)
		return -1;
	int rc = set_env("LD_PRELOAD", preload) | set_env("VRAMTRACE_DIR", job->log_dir);
	free(preload);
	if (job->stack_depth)
		rc |= set_env("VRAMTRACE_STACK_DEPTH", job->stack_depth);
	if (job->max_size)
		rc |= set_env("VRAMTRACE_MAX_SIZE", job->max_size);
	if (job->free_stacks)
		rc |= set_env("VRAMTRACE_FREE_STACKS", "1");
	if (job->stack_memo) /* "off" is a false word, "on" a true one (env_flag.h) */
		rc |= set_env("VRAMTRACE_STACK_MEMO", job->stack_memo);
	if (job->simulated_driver && use_simulated_driver(job))
		rc = -1;
	if (job->per_tensor) {
		/* each framework's own switch for one driver allocation per tensor */
		rc |= set_env("TF_GPU_ALLOCATOR", "cuda_malloc_async");
		rc |= set_env("XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
		rc |= set_env("PYTORCH_NO_CUDA_MEMORY_CACHING", "1");
	}
	return rc ? -1 : 0;
}

/* ---- run.json ---------------------------------------------------------- */

/* A JSON string: the analyzer's escaping (json_out.h), so a command line
 * that is not UTF-8 (argv is bytes) still makes valid JSON: each invalid
 * byte becomes U+FFFD, control characters are escaped. */
static void json_string(FILE *f, const char *s)
{
	vt_json_write_escaped(f, s, strlen(s));
}

static void write_run_fields(FILE *f, const struct run_job *job, int finished)
{
	fprintf(f, "{\n  \"command\": [");
	for (char **a = job->cmd; *a; a++) {
		fprintf(f, a == job->cmd ? "" : ", ");
		json_string(f, *a);
	}
	fprintf(f, "],\n  \"mode\": \"%s\",\n  \"shm\": %s,\n",
	        job->per_tensor ? "per-tensor" : "default", job->use_shm ? "true" : "false");
	if (job->use_shm) { /* where the logs are until the launcher moves them */
		fprintf(f, "  \"log_dir\": ");
		json_string(f, job->log_dir);
		fprintf(f, ",\n");
	}
	fprintf(f,
	        "  \"start_realtime_ns\": %llu,\n  \"pid\": %d,\n  \"launcher_pid\": %d,\n"
	        "  \"finished\": %s",
	        (unsigned long long)job->start_ns, (int)(job->pid > 0 ? job->pid : 0),
	        (int)getpid(), finished ? "true" : "false");
	if (finished) {
		if (WIFEXITED(job->status))
			fprintf(f, ",\n  \"exit_code\": %d,\n  \"signal\": null",
			        WEXITSTATUS(job->status));
		else
			fprintf(f, ",\n  \"exit_code\": null,\n  \"signal\": %d",
			        WTERMSIG(job->status));
		fprintf(f, ",\n  \"end_realtime_ns\": %llu", (unsigned long long)realtime_ns());
	}
	fprintf(f, "\n}\n");
}

/* DIR/run.json: how the job was started, and (finished) how it ended.
 * Replaced atomically, so a reader never sees half of it. */
static int write_run_json(const struct run_job *job, int finished)
{
	char tmp[PATH_MAX + 16], final[PATH_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s/.run.json.tmp", job->dir);
	snprintf(final, sizeof final, "%s/run.json", job->dir);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		fprintf(stderr, "vramtrace run: cannot write %s: %s\n", final, strerror(errno));
		return -1;
	}
	write_run_fields(f, job, finished);
	int bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, final)) {
		fprintf(stderr, "vramtrace run: cannot write %s\n", final);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* ---- spawn and wait ---------------------------------------------------- */

/* Signals are taken synchronously (blocked, then sigwaitinfo), not in a
 * handler: nothing can be lost between fork and wait, and a sanitizer's
 * deferred signal delivery cannot delay the forwarding. Every signal whose
 * default action ends a process, and that a job may be sent, is taken: the
 * launcher must outlive the job (its stderr goes through the launcher), so
 * a signal sent to the launcher alone goes to the job instead, and one a
 * terminal sends to the whole group (SIGINT, SIGQUIT) reaches the job
 * directly and is not sent twice. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

static int status_to_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* Forward signals until the job ends; its waitpid status in job->status. */
static void wait_forwarding(struct run_job *job, const sigset_t *set)
{
	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(set, &info);
		if (sig < 0 && errno != EINTR)
			break;
		if (sig > 0 && sig != SIGCHLD) {
			/* a terminal's ^C reaches the whole foreground group, the
			 * job included: forward only what was sent to us alone */
			if (info.si_code != SI_KERNEL)
				kill(job->pid, sig);
			continue;
		}
		pid_t r = waitpid(job->pid, &job->status, WNOHANG);
		if (r == job->pid || (r < 0 && errno != EINTR))
			return;
	}
	while (waitpid(job->pid, &job->status, 0) < 0 && errno == EINTR)
		;
}

/* execvp's errno when the child could not run the command, 0 when it did
 * (the pipe closed on exec). Closes fd. */
static int exec_failure(int fd)
{
	int e = 0;
	ssize_t n;
	while ((n = read(fd, &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(fd);
	return n == (ssize_t)sizeof e ? e : 0;
}

static int spawn_and_wait(struct run_job *job)
{
	sigset_t set, old;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	/* the job's stderr is relayed (pipe, or pty on a terminal) and
	 * framework OOM messages on it become marks in the trace */
	struct vt_relay relay;
	vt_relay_setup(&relay, job->dir);
	/* the child writes execvp's errno here; a successful exec closes it */
	int exec_status[2];
	if (pipe2(exec_status, O_CLOEXEC)) {
		fprintf(stderr, "vramtrace run: pipe: %s\n", strerror(errno));
		vt_relay_finish(&relay, 1);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(exec_status[0]);
		close(exec_status[1]);
		fprintf(stderr, "vramtrace run: fork: %s\n", strerror(errno));
		vt_relay_finish(&relay, 1);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL); /* the job gets what we had */
		vt_relay_in_child(&relay);
		close(exec_status[0]);
		execvp(job->cmd[0], job->cmd);
		int e = errno;
		(void)!write(exec_status[1], &e, sizeof e);
		_exit(e == ENOENT ? 127 : 126);
	}
	job->pid = pid;
	vt_relay_start(&relay, pid);
	close(exec_status[1]);
	job->exec_errno = exec_failure(exec_status[0]);
	if (!job->exec_errno)
		write_run_json(job, 0);
	wait_forwarding(job, &set);
	sigprocmask(SIG_SETMASK, &old, NULL);
	job->exit_code = status_to_exit_code(job->status);
	vt_relay_finish(&relay, job->exit_code); /* drained before the summary */
	return 0;
}

/* ---- a command that could not be run ---------------------------------- */

/* Remove what this launcher put in dir (no job ran: nothing of it is lost),
 * and dir itself when this launcher made it: a failed launch leaves nothing
 * that would refuse the next `run -o DIR`. */
static void remove_launch(const char *dir, int made_dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "vramtrace.", 10) && strcmp(e->d_name, "run.json") &&
		    strcmp(e->d_name, ".run.json.tmp"))
			continue;
		char path[PATH_MAX * 2];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	if (made_dir)
		rmdir(dir);
}

/* One line, and the shell's exit code: 127 not found, 126 not runnable. */
static int launch_failed(const struct run_job *job)
{
	remove_launch(job->dir, job->made_dir);
	if (job->use_shm)
		remove_launch(job->log_dir, 1);
	if (job->exec_errno == ENOENT) {
		fprintf(stderr, "vramtrace run: %s: command not found\n", job->cmd[0]);
		return 127;
	}
	fprintf(stderr, "vramtrace run: cannot run %s: %s\n", job->cmd[0],
	        strerror(job->exec_errno));
	return 126;
}

/* ---- summary ----------------------------------------------------------- */

static int count_event(const struct vt_record_view *rec, void *ctx)
{
	if (rec->type >= VT_REC_ALLOC && rec->type <= VT_REC_POOL_TRIM)
		++*(uint64_t *)ctx;
	return 0;
}

/* The shim's own time over the trace's logs, by their headers
 * (recording_cost.h); -1 when no log has the measure. */
static double recording_cost_ns(const struct vt_trace *trace)
{
	double total = -1;
	for (size_t i = 0; i < trace->nlogs; i++) {
		struct vt_self_cost c;
		struct vt_self_cost_summary s;
		vt_self_cost_from_header(vt_log_header(trace->logs[i]), &c);
		if (vt_self_cost_summarize(&c, 0, &s) == 0)
			total = (total < 0 ? 0 : total) + s.total_ns;
	}
	return total;
}

/* "; vramtrace's own time ..." (nothing when no log measured it), said as a
 * sum over threads when it adds up to more than the job's wall time. */
static void own_time_text(const struct run_job *job, const struct vt_trace *trace, char *buf,
                          size_t len)
{
	double ns = recording_cost_ns(trace);
	if (ns < 0)
		return;
	uint64_t now = realtime_ns();
	buf[0] = ';';
	buf[1] = ' ';
	vt_own_time_text(ns, now > job->start_ns ? now - job->start_ns : 0, buf + 2, len - 2);
}

static void print_summary(const struct run_job *job)
{
	struct vt_trace trace;
	char err[256] = "", cost[192] = "";
	uint64_t events = 0;
	size_t logs = 0;
	if (vt_trace_open(job->dir, &trace, err, sizeof err) == 0) {
		logs = trace.nlogs;
		vt_trace_for_each(&trace, count_event, &events);
		own_time_text(job, &trace, cost, sizeof cost);
		vt_trace_close(&trace);
	}
	/* the answer first (peaks, flags, out of memory, what to type next),
	 * then where the trace is and what it cost */
	vt_run_summary(job->dir, events, stderr);
	fprintf(stderr,
	        "vramtrace: trace in %s: %zu process log%s, %llu events%s; job exit %s %d\n",
	        job->dir, logs, logs == 1 ? "" : "s", (unsigned long long)events, cost,
	        WIFSIGNALED(job->status) ? "signal" : "code",
	        WIFSIGNALED(job->status) ? WTERMSIG(job->status) : job->exit_code);
}

int cmd_run(int argc, char **argv)
{
	struct run_job job;
	memset(&job, 0, sizeof job);
	int rc = parse_options(&job, argc, argv);
	if (rc)
		return rc == VT_CLI_HELP_SHOWN ? 0 : rc;
	if (find_shim(&job) || make_dirs(&job) || prepare_env(&job))
		return 2;
	job.start_ns = realtime_ns();
	if (spawn_and_wait(&job))
		return 2;
	if (job.exec_errno)
		return launch_failed(&job);
	if (job.use_shm)
		vt_run_collect_shm(job.log_dir, job.dir);
	vt_sidecar_write(job.dir); /* says why on stderr if it cannot */
	write_run_json(&job, 1);
	print_summary(&job);
	return job.exit_code;
}
