/* The job's stderr through the launcher (contract and modes: run_relay.h).
 *
 * Why a process forked before the job: the relay must be reading before the
 * job writes its first byte (a full pipe would block the job), and a failure
 * to start it must leave the job its plain stderr, which is only possible
 * while nothing has been forked yet. A process, not a thread, so the job's
 * stderr outlives the launcher: a launcher that is SIGKILLed takes a thread
 * with it, and the job's next write would get SIGPIPE. The relay process
 * blocks every signal (the job and the launcher get them; it ends when the
 * job's stream does) and learns that the launcher is gone when the control
 * pipe's write end closes: it then relays until the stream ends. */
#define _GNU_SOURCE
#include "run_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "log_writer.h"
#include "vramtrace/env_flag.h"

#define RELAY_BUF (64 * 1024)
#define DRAIN_QUIET_MS 200 /* after the job exited: stop after this much silence */
#define DRAIN_MAX_MS 2000  /* ... or this long in all (a grandchild keeps writing) */
#define MARK_TEXT_MAX 1024

const char *vt_relay_mode_name(int mode)
{
	return mode == VT_RELAY_PIPE ? "pipe" : mode == VT_RELAY_PTY ? "pty" : "off";
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void reset(struct vt_relay *r)
{
	close_fd(&r->read_fd);
	close_fd(&r->child_fd);
	close_fd(&r->wake[0]);
	close_fd(&r->wake[1]);
	r->mode = VT_RELAY_OFF;
}

/* ---- the launcher's log ---------------------------------------------------- */

static void open_launcher_log(struct vt_relay *r)
{
	struct vt_log_config cfg = {.dir = r->trace_dir, .stack_depth = 0};
	r->log_open = vt_log_init(&cfg) == 0 ? 1 : -1; /* -1: never retried */
	if (r->log_open < 0)
		return;
	pid_t pid = __atomic_load_n(&r->shared->job_pid, __ATOMIC_ACQUIRE);
	char text[64];
	snprintf(text, sizeof text, "stderr relay of pid %d", (int)pid);
	vt_log_write_mark(VT_MARK_LAUNCHER, text, (uint64_t)pid);
}

static void on_oom_line(const char *line, size_t len, const struct vt_oom_message *msg, void *ctx)
{
	struct vt_relay *r = ctx;
	if (r->log_open == 0)
		open_launcher_log(r);
	if (r->log_open < 0)
		return;
	char text[MARK_TEXT_MAX + 1];
	size_t n = len < MARK_TEXT_MAX ? len : MARK_TEXT_MAX;
	memcpy(text, line, n);
	text[n] = '\0';
	for (size_t i = 0; i < n; i++) /* the mark is one line of text */
		if (text[i] == '\0')
			text[i] = ' ';
	if (vt_log_write_mark(VT_MARK_FRAMEWORK_OOM, text, msg->bytes) == 0)
		r->marks++;
}

/* ---- the terminal ------------------------------------------------------------ */

static void copy_window_size(const struct vt_relay *r)
{
	struct winsize ws;
	if (ioctl(r->out_fd, TIOCGWINSZ, &ws) == 0)
		ioctl(r->read_fd, TIOCSWINSZ, &ws);
}

/* A pty whose slave has the terminal's settings, minus output processing:
 * the terminal itself will do that once, on the bytes we pass on. */
static int open_pty(struct vt_relay *r)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[128];
	if (master < 0 || grantpt(master) || unlockpt(master) ||
	    ptsname_r(master, name, sizeof name)) {
		if (master >= 0)
			close(master);
		return -1;
	}
	int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0) {
		close(master);
		return -1;
	}
	struct termios t;
	if (tcgetattr(r->out_fd, &t) == 0) {
		t.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(slave, TCSANOW, &t);
	}
	r->read_fd = master;
	r->child_fd = slave;
	copy_window_size(r);
	return 0;
}

static int open_pipe(struct vt_relay *r)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	r->read_fd = fds[0];
	r->child_fd = fds[1];
	return 0;
}

/* ---- relaying ------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* All of buf to out_fd; -1 when the reader is gone (EPIPE) or it fails. */
static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			poll(&p, 1, 1000);
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

/* Returns 0 to go on, 1 at the end of the stream. */
static int relay_some(struct vt_relay *r, char *buf)
{
	ssize_t n = read(r->read_fd, buf, RELAY_BUF);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : 1; /* EIO: pty slave closed */
	if (n == 0)
		return 1;
	r->bytes_relayed += (uint64_t)n;
	/* pass the bytes on first: the scan must never delay them */
	if (write_all(r->out_fd, buf, (size_t)n) < 0)
		return 1; /* our stderr is gone: the job gets EPIPE, as without us */
	vt_stderr_scan_feed(&r->scan, buf, (size_t)n);
	return 0;
}

/* Control-pipe bytes: 'x' the job exited. 1 then; 0 otherwise. */
static int read_control(struct vt_relay *r)
{
	char cmd[64];
	ssize_t n = read(r->wake[0], cmd, sizeof cmd);
	for (ssize_t i = 0; i < n; i++)
		if (cmd[i] == 'x')
			return 1;
	return 0;
}

/* SIGWINCH, taken through a signalfd: the terminal was resized. */
static void on_resize(struct vt_relay *r, int sfd)
{
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	copy_window_size(r);
}

static int resize_fd(const struct vt_relay *r)
{
	if (r->mode != VT_RELAY_PTY)
		return -1;
	sigset_t winch;
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	return signalfd(-1, &winch, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* The relay process's loop: until the stream ends, or (the job reaped by
 * the launcher) it has been quiet a while; with the launcher gone, until
 * the stream ends. */
static void relay_loop(struct vt_relay *r, char *buf)
{
	int sfd = resize_fd(r);
	uint64_t drain_start = 0, last_data = 0;
	int draining = 0, control = r->wake[0];
	for (;;) {
		struct pollfd p[3] = {{.fd = r->read_fd, .events = POLLIN},
		                      {.fd = control, .events = POLLIN},
		                      {.fd = sfd, .events = POLLIN}};
		int rc = poll(p, 3, draining ? DRAIN_QUIET_MS : -1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break; /* quiet since the job exited (or poll failed) */
		if (p[2].revents & POLLIN)
			on_resize(r, sfd);
		if ((p[1].revents & POLLIN) && read_control(r) && !draining) {
			draining = 1;
			drain_start = last_data = now_ms();
		} else if (p[1].revents & (POLLHUP | POLLERR)) {
			control = -1; /* the launcher is gone: relay to the end */
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (relay_some(r, buf))
				break;
			last_data = now_ms();
		}
		if (draining && (now_ms() - drain_start > DRAIN_MAX_MS ||
		                 now_ms() - last_data > DRAIN_QUIET_MS))
			break;
	}
	if (sfd >= 0)
		close(sfd);
	/* the stream ended first: the job's exit code comes with 'x' */
	while (control >= 0 && !draining) {
		struct pollfd c = {.fd = control, .events = POLLIN};
		if (poll(&c, 1, -1) < 0 && errno != EINTR)
			break;
		if (c.revents & POLLIN)
			draining = read_control(r);
		else if (c.revents & (POLLHUP | POLLERR))
			break;
	}
}

static _Noreturn void relay_process(struct vt_relay *r)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_NAME, "vramtrace-relay");
	close_fd(&r->child_fd); /* the job holds the only writer: EOF when it is done */
	close_fd(&r->wake[1]);  /* the launcher's: its end closing says it is gone */
	char *buf = malloc(RELAY_BUF);
	if (buf)
		relay_loop(r, buf);
	free(buf);
	vt_stderr_scan_finish(&r->scan);
	struct vt_relay_shared *sh = r->shared;
	__atomic_store_n(&sh->bytes_relayed, r->bytes_relayed, __ATOMIC_RELEASE);
	__atomic_store_n(&sh->marks, r->marks, __ATOMIC_RELEASE);
	int code = __atomic_load_n(&sh->exit_code, __ATOMIC_ACQUIRE);
	if (r->log_open > 0 && code >= 0) /* the job's end is known only to the launcher */
		vt_log_finish(code);
	_exit(0);
}

/* ---- public ---------------------------------------------------------------------- */

static int relay_wanted(void)
{
	if (vt_env_off("VRAMTRACE_RELAY"))
		return 0;
	return fcntl(STDERR_FILENO, F_GETFL) >= 0; /* a closed stderr stays closed */
}

/* The relay process, forked now; the launcher keeps the job's end of the
 * stream and the control pipe's write end. 0, or -1 (nothing forked). */
static int fork_relay(struct vt_relay *r)
{
	r->shared = mmap(NULL, sizeof *r->shared, PROT_READ | PROT_WRITE,
	                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->shared == MAP_FAILED) {
		r->shared = NULL;
		return -1;
	}
	r->shared->exit_code = -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		relay_process(r);
	r->relay_pid = pid;
	close_fd(&r->read_fd);
	close_fd(&r->wake[0]);
	return 0;
}

void vt_relay_setup(struct vt_relay *r, const char *trace_dir)
{
	memset(r, 0, sizeof *r);
	r->read_fd = r->child_fd = r->wake[0] = r->wake[1] = -1;
	r->out_fd = STDERR_FILENO;
	snprintf(r->trace_dir, sizeof r->trace_dir, "%s", trace_dir);
	vt_stderr_scan_init(&r->scan, on_oom_line, r);
	if (!relay_wanted())
		return;
	r->mode = isatty(r->out_fd) && open_pty(r) == 0 ? VT_RELAY_PTY : VT_RELAY_PIPE;
	if ((r->mode == VT_RELAY_PIPE && open_pipe(r)) || pipe2(r->wake, O_CLOEXEC | O_NONBLOCK)) {
		fprintf(stderr,
		        "vramtrace run: stderr not relayed (%s): framework OOM messages "
		        "will not be recorded\n",
		        strerror(errno));
		reset(r);
		return;
	}
	fflush(NULL); /* nothing buffered is written twice */
	if (fork_relay(r)) {
		fprintf(stderr, "vramtrace run: stderr not relayed (no relay process: %s)\n",
		        strerror(errno));
		if (r->shared)
			munmap(r->shared, sizeof *r->shared);
		r->shared = NULL;
		reset(r);
	}
}

void vt_relay_in_child(struct vt_relay *r)
{
	if (r->mode == VT_RELAY_OFF)
		return;
	dup2(r->child_fd, STDERR_FILENO); /* the copy is not close-on-exec */
}

void vt_relay_start(struct vt_relay *r, pid_t job_pid)
{
	r->job_pid = job_pid;
	if (r->mode == VT_RELAY_OFF)
		return;
	__atomic_store_n(&r->shared->job_pid, job_pid, __ATOMIC_RELEASE);
	close_fd(&r->child_fd); /* the job holds the only writer now: EOF when it is done */
}

/* 'x' to the relay. It may be gone already (its stderr broke): the write
 * then fails with EPIPE, and the SIGPIPE that comes with it, blocked, is
 * taken here rather than ending the launcher. */
static void tell_job_exited(struct vt_relay *r)
{
	sigset_t pipe_sig, old;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, &old);
	if (write(r->wake[1], "x", 1) < 0 && errno == EPIPE) {
		const struct timespec now = {0, 0};
		sigtimedwait(&pipe_sig, NULL, &now);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void vt_relay_finish(struct vt_relay *r, int exit_code)
{
	if (r->relay_pid > 0) {
		__atomic_store_n(&r->shared->exit_code, exit_code, __ATOMIC_RELEASE);
		tell_job_exited(r);
		while (waitpid(r->relay_pid, NULL, 0) < 0 && errno == EINTR)
			;
		r->relay_pid = 0;
		r->bytes_relayed = __atomic_load_n(&r->shared->bytes_relayed, __ATOMIC_ACQUIRE);
		r->marks = __atomic_load_n(&r->shared->marks, __ATOMIC_ACQUIRE);
	}
	if (r->shared)
		munmap(r->shared, sizeof *r->shared);
	r->shared = NULL;
	reset(r);
}
