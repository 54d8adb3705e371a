/* Whether a log's process still runs (see proc_alive.h). */
#define _GNU_SOURCE
#include "proc_alive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The start of a small file into buf (NUL-terminated); 0 if unreadable. */
static int read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return 1;
}

/* run.json says "finished": true. */
static int run_finished(const char *trace_dir)
{
	char path[4096], text[16384];
	if (!trace_dir || snprintf(path, sizeof path, "%s/run.json", trace_dir) >= (int)sizeof path)
		return 0;
	return read_text(path, text, sizeof text) && strstr(text, "\"finished\": true") != NULL;
}

/* The boot time in seconds since the epoch (/proc/stat btime), 0 unknown. */
static unsigned long long boot_time_s(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	unsigned long long btime = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	if (f)
		fclose(f);
	return btime;
}

/* When process pid started, ns since the epoch; 0 if it does not exist. */
static unsigned long long start_realtime_ns(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (!read_text(path, buf, sizeof buf))
		return 0;
	/* fields after the command, which may hold spaces and parentheses */
	const char *p = strrchr(buf, ')');
	unsigned long long ticks = 0;
	if (!p || sscanf(p + 2,
	                 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
	                 "%*d %*d %*d %llu",
	                 &ticks) != 1)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long boot = boot_time_s();
	if (hz <= 0 || !boot)
		return 0;
	return boot * 1000000000ull + ticks * (1000000000ull / (unsigned long long)hz);
}

int vt_log_process_running(const struct vt_file_header *hdr, const char *trace_dir)
{
	if (!hdr || VT_STATE_OF(hdr->state) != VT_STATE_RUNNING || hdr->pid <= 0)
		return 0;
	char host[sizeof hdr->hostname + 1];
	if (gethostname(host, sizeof host) != 0 ||
	    strncmp(host, hdr->hostname, sizeof hdr->hostname) != 0)
		return 0;
	if (run_finished(trace_dir))
		return 0;
	unsigned long long started = start_realtime_ns(hdr->pid);
	/* the start time is in clock ticks: allow a second of rounding */
	return started && started <= hdr->realtime_base_ns + 1000000000ull;
}
