/* The symbol sidecar's reader, which trusts nothing (sidecar_read.h). */
#include "sidecar_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nomem.h" /* before <uthash.h>: its out-of-memory exit */
#include <uthash.h>

#define MAX_LINE (64u << 10)
#define MAX_MODULE_NUMBER 1000000u
#define MAX_FILE_BYTES (1ull << 30)

struct sc_addr {
	uint64_t offset;
	struct vt_symbol *syms;
	size_t nsyms;
	UT_hash_handle hh;
};

struct sc_module {
	uint32_t n;
	char *key; /* build id bytes, or NUL + path when it has none */
	unsigned keylen;
	struct sc_addr *addrs;
	UT_hash_handle hh_n, hh_key;
};

struct vt_sidecar {
	struct sc_module *by_n, *by_key;
	size_t naddrs;
	unsigned warnings;
	int complete;
	char first_warning[160];
};

/* ---- unescaping ---------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A malloc'd, unescaped copy of s[0..len); NULL if the escaping is bad or
 * it holds a NUL byte. Empty input gives "" (caller decides if that means
 * "none"). */
static char *unescape(const char *s, size_t len)
{
	char *out = vt_xcalloc(1, len + 1), *o = out;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '\0')
			goto bad;
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		if (++i >= len)
			goto bad;
		switch (s[i]) {
		case '\\': *o++ = '\\'; break;
		case 't': *o++ = '\t'; break;
		case 'n': *o++ = '\n'; break;
		case 'x': {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				goto bad;
			*o++ = (char)(hi << 4 | lo);
			i += 2;
			break;
		}
		default:
			goto bad;
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* ---- strict numbers --------------------------------------------------------- */

static int parse_dec(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	if (len == 0 || len > 10)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_hex(const char *s, size_t len, uint64_t *out)
{
	if (len == 0 || len > 16)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		int h = hexval(s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint64_t)h;
	}
	*out = v;
	return 0;
}

/* ---- the reader ------------------------------------------------------------- */

struct field {
	const char *p;
	size_t len;
};

/* Split a line at TABs into exactly `want` fields; -1 otherwise. */
static int split(const char *line, size_t len, struct field *f, unsigned want)
{
	unsigned n = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && line[i] != '\t')
			continue;
		if (n == want)
			return -1;
		f[n++] = (struct field){line + start, i - start};
		start = i + 1;
	}
	return n == want ? 0 : -1;
}

struct parser {
	struct vt_sidecar *sc;
	const char *name;
	size_t lineno;
	struct sc_module *cur_mod; /* module of the pending A */
	struct sc_addr *pending;   /* A waiting for its F lines */
	size_t want_frames;
	size_t a_lines;
};

/* Parsing stays quiet (fuzz targets, tests); vt_sidecar_load says it. */
static void warn(struct parser *ps, const char *what)
{
	if (ps->sc->warnings++ == 0)
		snprintf(ps->sc->first_warning, sizeof ps->sc->first_warning, "%s:%zu: %s",
			 ps->name, ps->lineno, what);
}

static void free_addr(struct sc_addr *a)
{
	for (size_t i = 0; a && i < a->nsyms; i++) {
		free((char *)a->syms[i].function);
		free((char *)a->syms[i].file);
	}
	if (a)
		free(a->syms);
	free(a);
}

/* The pending address is complete: keep it (first one wins). */
static void finish_pending(struct parser *ps, int complete)
{
	struct sc_addr *a = ps->pending;
	ps->pending = NULL;
	if (!a)
		return;
	struct sc_addr *old = NULL;
	if (complete)
		HASH_FIND(hh, ps->cur_mod->addrs, &a->offset, sizeof a->offset, old);
	if (!complete || old || a->nsyms == 0) {
		if (!complete)
			warn(ps, "address entry cut short: dropped");
		free_addr(a);
		return;
	}
	HASH_ADD(hh, ps->cur_mod->addrs, offset, sizeof a->offset, a);
	ps->sc->naddrs++;
}

static int parse_module(struct parser *ps, const char *line, size_t len)
{
	struct field f[4];
	uint64_t n;
	if (split(line, len, f, 4) || parse_dec(f[1].p, f[1].len, MAX_MODULE_NUMBER, &n) || n == 0)
		return -1;
	if (f[2].len > 64 || f[2].len % 2)
		return -1;
	uint8_t bid[32];
	for (size_t i = 0; i < f[2].len / 2; i++) {
		int hi = hexval(f[2].p[2 * i]), lo = hexval(f[2].p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		bid[i] = (uint8_t)(hi << 4 | lo);
	}
	char *path = unescape(f[3].p, f[3].len);
	if (!path)
		return -1;
	struct sc_module *m = NULL;
	uint32_t num = (uint32_t)n;
	HASH_FIND(hh_n, ps->sc->by_n, &num, sizeof num, m);
	if (m) {
		free(path);
		return -1; /* a module number twice */
	}
	m = vt_xcalloc(1, sizeof *m);
	m->n = num;
	size_t bid_len = f[2].len / 2, plen = strlen(path);
	m->keylen = (unsigned)(bid_len ? bid_len : 1 + plen);
	m->key = vt_xcalloc(1, m->keylen);
	if (bid_len)
		memcpy(m->key, bid, bid_len);
	else
		memcpy(m->key + 1, path, plen);
	free(path);
	HASH_ADD(hh_n, ps->sc->by_n, n, sizeof m->n, m);
	struct sc_module *same = NULL;
	HASH_FIND(hh_key, ps->sc->by_key, m->key, m->keylen, same);
	if (!same)
		HASH_ADD_KEYPTR(hh_key, ps->sc->by_key, m->key, m->keylen, m);
	return 0;
}

static int parse_addr(struct parser *ps, const char *line, size_t len)
{
	struct field f[4];
	uint64_t n, off, k;
	if (split(line, len, f, 4) || parse_dec(f[1].p, f[1].len, MAX_MODULE_NUMBER, &n) ||
	    parse_hex(f[2].p, f[2].len, &off) ||
	    parse_dec(f[3].p, f[3].len, VT_SIDECAR_MAX_FRAMES, &k) || k == 0)
		return -1;
	uint32_t num = (uint32_t)n;
	struct sc_module *m = NULL;
	HASH_FIND(hh_n, ps->sc->by_n, &num, sizeof num, m);
	if (!m)
		return -1;
	ps->a_lines++;
	ps->cur_mod = m;
	ps->pending = vt_xcalloc(1, sizeof *ps->pending);
	ps->pending->offset = off;
	ps->pending->syms = vt_xcalloc(k, sizeof *ps->pending->syms);
	ps->want_frames = k;
	return 0;
}

static int parse_frame(struct parser *ps, const char *line, size_t len)
{
	struct field f[5];
	uint64_t lineno, inl;
	struct sc_addr *a = ps->pending;
	if (!a || split(line, len, f, 5) || parse_dec(f[3].p, f[3].len, INT32_MAX, &lineno) ||
	    parse_dec(f[4].p, f[4].len, 1, &inl) || f[1].len == 0)
		return -1;
	char *fn = unescape(f[1].p, f[1].len);
	char *file = f[2].len ? unescape(f[2].p, f[2].len) : NULL;
	if (!fn || (f[2].len && !file)) {
		free(fn);
		free(file);
		return -1;
	}
	a->syms[a->nsyms++] = (struct vt_symbol){fn, file, (uint32_t)lineno, (uint32_t)inl};
	if (a->nsyms == ps->want_frames)
		finish_pending(ps, 1);
	return 0;
}

static void parse_line(struct parser *ps, const char *line, size_t len)
{
	if (len == 0 || line[0] == '#')
		return;
	if (ps->pending && line[0] != 'F')
		finish_pending(ps, 0); /* fewer F lines than promised */
	int rc = 0;
	if (len >= 2 && line[1] == '\t') {
		switch (line[0]) {
		case 'M': rc = parse_module(ps, line, len); break;
		case 'A': rc = parse_addr(ps, line, len); break;
		case 'F': rc = parse_frame(ps, line, len); break;
		case 'E': {
			struct field f[2];
			uint64_t count;
			rc = split(line, len, f, 2) ||
			     parse_dec(f[1].p, f[1].len, UINT32_MAX, &count);
			if (!rc)
				ps->sc->complete = count == ps->a_lines;
			return;
		}
		default: warn(ps, "unknown line kind: skipped"); return;
		}
	} else {
		rc = -1;
	}
	if (rc) {
		warn(ps, "malformed line: skipped");
		if (ps->pending) {
			free_addr(ps->pending);
			ps->pending = NULL;
		}
	}
}

struct vt_sidecar *vt_sidecar_parse(const char *data, size_t len, const char *name, char *err,
				    size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	static const char magic[] = "vtsym\t";
	const char *nl = memchr(data, '\n', len);
	size_t first = nl ? (size_t)(nl - data) : len;
	uint64_t version;
	if (first < sizeof magic - 1 || memcmp(data, magic, sizeof magic - 1) ||
	    parse_dec(data + sizeof magic - 1, first - (sizeof magic - 1), UINT32_MAX, &version)) {
		snprintf(err, errlen, "%s: not a vramtrace symbol sidecar", name);
		return NULL;
	}
	if (version != VT_SIDECAR_VERSION) {
		snprintf(err, errlen, "%s: sidecar version %llu is not supported (this build reads %d)",
			 name, (unsigned long long)version, VT_SIDECAR_VERSION);
		return NULL;
	}
	struct parser ps = {vt_xcalloc(1, sizeof(struct vt_sidecar)), name, 1, NULL, NULL, 0, 0};
	size_t pos = nl ? first + 1 : len;
	while (pos < len) {
		ps.lineno++;
		const char *end = memchr(data + pos, '\n', len - pos);
		size_t l = end ? (size_t)(end - (data + pos)) : len - pos;
		if (l > MAX_LINE)
			warn(&ps, "line too long: skipped");
		else
			parse_line(&ps, data + pos, l);
		pos += l + 1;
	}
	if (ps.pending)
		finish_pending(&ps, 0);
	if (!ps.sc->complete)
		warn(&ps, "no valid end line: the sidecar was cut short (using what is there)");
	return ps.sc;
}

struct vt_sidecar *vt_sidecar_load(const char *path, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	/* O_NONBLOCK: a FIFO planted as the sidecar must not block the open
	 * forever (fstat then refuses it); no effect on a regular file. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR) /* absent is not an error */
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > MAX_FILE_BYTES) {
		snprintf(err, errlen, "%s: not a regular file of sane size", path);
		close(fd);
		return NULL;
	}
	size_t size = (size_t)sb.st_size, got = 0;
	char *buf = vt_xcalloc(1, size + 1);
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	struct vt_sidecar *sc = vt_sidecar_parse(buf, got, path, err, errlen);
	free(buf);
	if (sc && sc->warnings)
		fprintf(stderr, "vramtrace: %s (%u problem%s in the symbol sidecar; the rest is used)\n",
			sc->first_warning, sc->warnings, sc->warnings == 1 ? "" : "s");
	return sc;
}

void vt_sidecar_free(struct vt_sidecar *sc)
{
	if (!sc)
		return;
	HASH_CLEAR(hh_key, sc->by_key);
	struct sc_module *m, *mt;
	HASH_ITER(hh_n, sc->by_n, m, mt) {
		HASH_DELETE(hh_n, sc->by_n, m);
		struct sc_addr *a, *at;
		HASH_ITER(hh, m->addrs, a, at) {
			HASH_DEL(m->addrs, a);
			free_addr(a);
		}
		free(m->key);
		free(m);
	}
	free(sc);
}

int vt_sidecar_lookup(const struct vt_sidecar *sc, const struct vt_module_info *mod,
		      uint64_t offset, struct vt_frame_names *out)
{
	if (!sc || !mod)
		return -1;
	size_t plen = strlen(mod->path);
	unsigned keylen = (unsigned)(mod->build_id_len ? mod->build_id_len : 1 + plen);
	char *key = vt_xcalloc(1, keylen);
	if (mod->build_id_len)
		memcpy(key, mod->build_id, mod->build_id_len);
	else
		memcpy(key + 1, mod->path, plen);
	struct sc_module *m = NULL;
	HASH_FIND(hh_key, sc->by_key, key, keylen, m);
	free(key);
	struct sc_addr *a = NULL;
	if (m)
		HASH_FIND(hh, m->addrs, &offset, sizeof offset, a);
	if (!a)
		return -1;
	*out = (struct vt_frame_names){VT_SYM_OK, "sidecar", a->nsyms, a->syms};
	return 0;
}

size_t vt_sidecar_addresses(const struct vt_sidecar *sc)
{
	return sc ? sc->naddrs : 0;
}

unsigned vt_sidecar_warnings(const struct vt_sidecar *sc)
{
	return sc ? sc->warnings : 0;
}

const char *vt_sidecar_first_warning(const struct vt_sidecar *sc)
{
	return sc && sc->warnings ? sc->first_warning : NULL;
}

int vt_sidecar_complete(const struct vt_sidecar *sc)
{
	return sc && sc->complete;
}

