/* The job's stderr through the launcher (contract and modes: run_relay.h).
 *
 * Why a thread created before fork: the relay must be reading before the job
 * writes its first byte (a full pipe would block the job), and a failure to
 * start it must leave the job its plain stderr, which is only possible while
 * nothing has been forked yet. The thread blocks every signal, so the
 * launcher's main thread keeps receiving (and forwarding) them. */
#define _GNU_SOURCE
#include "run_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#define DRAIN_QUIET_MS 200    /* after the job exited: stop after this much silence */
#define DRAIN_MAX_MS 2000     /* ... or this long in all (a grandchild keeps writing) */
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
	pid_t pid = __atomic_load_n(&r->job_pid, __ATOMIC_ACQUIRE);
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

static int g_winch_fd = -1; /* the relay's wake pipe while a pty relay runs */

static void on_winch(int sig)
{
	(void)sig;
	int saved = errno;
	if (g_winch_fd >= 0 && write(g_winch_fd, "w", 1) < 0) {
		/* a full wake pipe already holds a resize request */
	}
	errno = saved;
}

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
	if (master < 0 || grantpt(master) || unlockpt(master) || ptsname_r(master, name, sizeof name)) {
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

/* Wake-pipe bytes: 'x' the job exited, 'w' the window size changed. */
static int read_wake(struct vt_relay *r)
{
	char cmd[64];
	int exited = 0;
	ssize_t n = read(r->wake[0], cmd, sizeof cmd);
	for (ssize_t i = 0; i < n; i++) {
		if (cmd[i] == 'x')
			exited = 1;
		else if (cmd[i] == 'w' && r->mode == VT_RELAY_PTY)
			copy_window_size(r);
	}
	return exited;
}

static void *relay_thread(void *arg)
{
	struct vt_relay *r = arg;
	char *buf = malloc(RELAY_BUF);
	uint64_t drain_start = 0, last_data = 0;
	int draining = 0;
	while (buf) {
		struct pollfd p[2] = {{.fd = r->read_fd, .events = POLLIN},
		                      {.fd = r->wake[0], .events = POLLIN}};
		int rc = poll(p, 2, draining ? DRAIN_QUIET_MS : -1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			break; /* quiet since the job exited (or poll failed) */
		if ((p[1].revents & POLLIN) && read_wake(r) && !draining) {
			draining = 1;
			drain_start = last_data = now_ms();
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
	free(buf);
	vt_stderr_scan_finish(&r->scan);
	return NULL;
}

/* ---- public ---------------------------------------------------------------------- */

static int relay_wanted(void)
{
	if (vt_env_off("VRAMTRACE_RELAY"))
		return 0;
	return fcntl(STDERR_FILENO, F_GETFL) >= 0; /* a closed stderr stays closed */
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
		fprintf(stderr, "vramtrace run: stderr not relayed (%s): framework OOM messages "
		                "will not be recorded\n", strerror(errno));
		reset(r);
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&r->thread, NULL, relay_thread, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		fprintf(stderr, "vramtrace run: stderr not relayed (no thread: %s)\n", strerror(rc));
		reset(r);
		return;
	}
	r->thread_started = 1;
}

void vt_relay_in_child(struct vt_relay *r)
{
	if (r->mode == VT_RELAY_OFF)
		return;
	dup2(r->child_fd, STDERR_FILENO); /* the copy is not close-on-exec */
}

void vt_relay_start(struct vt_relay *r, pid_t job_pid)
{
	__atomic_store_n(&r->job_pid, job_pid, __ATOMIC_RELEASE);
	if (r->mode == VT_RELAY_OFF)
		return;
	close_fd(&r->child_fd); /* the job holds the only writer now: EOF when it is done */
	if (r->mode == VT_RELAY_PTY) {
		g_winch_fd = r->wake[1];
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_winch;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGWINCH, &sa, NULL);
	}
}

void vt_relay_finish(struct vt_relay *r, int exit_code)
{
	if (r->thread_started) {
		if (write(r->wake[1], "x", 1) < 0) {
			/* full wake pipe: the thread is awake anyway */
		}
		pthread_join(r->thread, NULL);
		r->thread_started = 0;
	}
	if (r->mode == VT_RELAY_PTY) {
		signal(SIGWINCH, SIG_DFL);
		g_winch_fd = -1;
	}
	reset(r);
	if (r->log_open > 0)
		vt_log_finish(exit_code);
}
