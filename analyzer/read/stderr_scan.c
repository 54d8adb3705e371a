/* Framework OOM messages in a byte stream (formats and sources: stderr_scan.h).
 *
 * One table row per message format: the phrase that identifies it and the
 * parser that pulls the size (and the GPU, when the message names one) out
 * of the rest of the line. Rows are tried in order, most specific first, so
 * "ResourceExhaustedError: OOM when allocating tensor ..." is parsed as the
 * tensor message it carries. */
#define _GNU_SOURCE /* memmem */
#include "stderr_scan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- bounded text helpers (lines are not NUL-terminated) ---------------- */

struct span {
	const char *p, *end;
};

static const char *find(struct span s, const char *needle)
{
	return memmem(s.p, (size_t)(s.end - s.p), needle, strlen(needle));
}

/* The text after needle, or an empty span when needle is absent. */
static struct span after(struct span s, const char *needle)
{
	const char *at = find(s, needle);
	struct span out = {s.end, s.end};
	if (at)
		out.p = at + strlen(needle);
	return out;
}

static const char *skip_spaces(const char *p, const char *end)
{
	while (p < end && *p == ' ')
		p++;
	return p;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Decimal digits at p; NULL when none or on overflow. */
static const char *parse_u64(const char *p, const char *end, uint64_t *v)
{
	uint64_t x = 0;
	const char *start = p;
	for (; p < end && is_digit(*p); p++) {
		if (x > (UINT64_MAX - 9) / 10)
			return NULL;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (p == start)
		return NULL;
	*v = x;
	return p;
}

/* "2.26 GiB", "34.10MiB", "512 bytes", "1.70 GB": binary units (PyTorch's
 * format_size and TensorFlow's HumanReadableNumBytes both use 1024). */
static const char *parse_human_size(const char *p, const char *end, uint64_t *bytes)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
		{"bytes", 1.0}, {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0},
		{"KiB", 1024.0}, {"TB", 1099511627776.0}, {"GB", 1073741824.0}, {"MB", 1048576.0},
		{"KB", 1024.0},  {"B", 1.0},
	};
	uint64_t whole, frac = 0;
	double frac_scale = 1.0;
	const char *q = parse_u64(p, end, &whole);
	if (!q)
		return NULL;
	if (q < end && *q == '.') {
		const char *f = q + 1;
		for (q = f; q < end && is_digit(*q) && q - f < 9; q++) {
			frac = frac * 10 + (uint64_t)(*q - '0');
			frac_scale *= 10.0;
		}
		while (q < end && is_digit(*q))
			q++;
	}
	q = skip_spaces(q, end);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		size_t n = strlen(units[i].unit);
		if ((size_t)(end - q) >= n && !memcmp(q, units[i].unit, n)) {
			double v = ((double)whole + (double)frac / frac_scale) * units[i].scale;
			if (!(v < 18446744073709551615.0))
				return NULL;
			*bytes = (uint64_t)llround(v);
			return q + n;
		}
	}
	return NULL;
}

/* The number right after needle (an ordinal), -1 if absent. */
static int ordinal_after(struct span s, const char *needle)
{
	struct span rest = after(s, needle);
	uint64_t v;
	if (rest.p < rest.end && parse_u64(rest.p, rest.end, &v) && v < 4096)
		return (int)v;
	return -1;
}

/* ---- TensorFlow --------------------------------------------------------- */

/* DataTypeString() names (tensorflow/core/framework/types.cc) -> bytes. */
static unsigned tf_dtype_size(const char *p, const char *end)
{
	static const struct {
		const char *name;
		unsigned size;
	} types[] = {
		{"float", 4},     {"double", 8},     {"half", 2},        {"bfloat16", 2},
		{"int8", 1},      {"uint8", 1},      {"int16", 2},       {"uint16", 2},
		{"int32", 4},     {"uint32", 4},     {"int64", 8},       {"uint64", 8},
		{"bool", 1},      {"complex64", 8},  {"complex128", 16}, {"qint8", 1},
		{"quint8", 1},    {"qint16", 2},     {"quint16", 2},     {"qint32", 4},
		{"float8_e5m2", 1}, {"float8_e4m3fn", 1},
	};
	const char *w = p;
	while (w < end && ((*w >= 'a' && *w <= 'z') || is_digit(*w) || *w == '_'))
		w++;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if ((size_t)(w - p) == strlen(types[i].name) && !memcmp(p, types[i].name, (size_t)(w - p)))
			return types[i].size;
	return 0;
}

/* "shape[64,2016,9,9]" / "shape [4096]" / "shape[]": element count. */
static int tf_shape_elements(struct span s, uint64_t *elements, const char **past)
{
	struct span rest = after(s, "shape");
	const char *p = skip_spaces(rest.p, rest.end);
	if (p >= rest.end || *p != '[')
		return 0;
	uint64_t n = 1;
	for (p++; p < rest.end && *p != ']';) {
		uint64_t dim;
		p = parse_u64(skip_spaces(p, rest.end), rest.end, &dim);
		if (!p || (dim && n > UINT64_MAX / dim))
			return 0;
		n *= dim;
		p = skip_spaces(p, rest.end);
		if (p < rest.end && *p == ',')
			p++;
	}
	if (p >= rest.end)
		return 0;
	*elements = n;
	*past = p + 1;
	return 1;
}

static void parse_tf_tensor(struct span s, struct vt_oom_message *m)
{
	uint64_t elements;
	const char *past;
	if (tf_shape_elements(s, &elements, &past)) {
		struct span type = after((struct span){past, s.end}, "type ");
		unsigned size = type.p < type.end ? tf_dtype_size(type.p, type.end) : 0;
		if (size && elements <= UINT64_MAX / size) {
			m->bytes = elements * size;
			m->bytes_exact = 1;
		}
	}
	m->device = ordinal_after(s, "device:GPU:");
}

static void parse_tf_bfc(struct span s, struct vt_oom_message *m)
{
	struct span rest = after(s, "trying to allocate ");
	struct span rounded = after(s, "(rounded to ");
	uint64_t v;
	if (rounded.p < rounded.end && parse_u64(rounded.p, rounded.end, &v)) {
		m->bytes = v;
		m->bytes_exact = 1;
	} else if (parse_human_size(rest.p, rest.end, &v)) {
		m->bytes = v;
	}
	m->device = ordinal_after(s, "(GPU_");
}

static void parse_nothing(struct span s, struct vt_oom_message *m)
{
	m->device = ordinal_after(s, "device:GPU:");
}

/* ---- XLA ------------------------------------------------------------------ */

static void parse_xla_oom(struct span s, struct vt_oom_message *m)
{
	struct span rest = after(s, "Out of memory while trying to allocate ");
	uint64_t v;
	const char *p = parse_u64(rest.p, rest.end, &v);
	if (p && (size_t)(rest.end - p) >= 6 && !memcmp(p, " bytes", 6)) {
		m->bytes = v;
		m->bytes_exact = 1;
	}
	m->device = ordinal_after(s, "device ordinal ");
}

/* "Failed to allocate request for 256.00MiB (268435456B) on device ordinal 0" */
static void parse_xla_request(struct span s, struct vt_oom_message *m)
{
	struct span rest = after(s, "Failed to allocate request for ");
	uint64_t v;
	const char *p = parse_human_size(rest.p, rest.end, &v);
	if (p) {
		m->bytes = v;
		p = skip_spaces(p, rest.end);
		uint64_t exact;
		const char *q = p < rest.end && *p == '(' ? parse_u64(p + 1, rest.end, &exact) : NULL;
		if (q && q < rest.end && *q == 'B') {
			m->bytes = exact;
			m->bytes_exact = 1;
		}
	}
	m->device = ordinal_after(s, "device ordinal ");
}

/* ---- PyTorch ---------------------------------------------------------------- */

static void parse_pytorch(struct span s, struct vt_oom_message *m)
{
	struct span rest = after(s, "Tried to allocate ");
	uint64_t v;
	if (rest.p < rest.end && parse_human_size(rest.p, rest.end, &v))
		m->bytes = v;
	m->bytes_exact = m->bytes && m->bytes <= 1024; /* "N bytes" is exact */
	/* "(GPU 0; ..." before 2.1, ". GPU 0 has a total capacity" after */
	m->device = ordinal_after(rest.p < rest.end ? rest : s, "GPU ");
}

/* ---- the table -------------------------------------------------------------- */

struct oom_format {
	const char *phrase;  /* identifies the message */
	const char *veto;    /* the line is not a failure when it holds this */
	int framework;
	const char *name;
	void (*parse)(struct span, struct vt_oom_message *);
};

static const struct oom_format formats[] = {
	{"OOM when allocating tensor", NULL, VT_OOM_FW_TENSORFLOW, "tf_tensor", parse_tf_tensor},
	{"Out of memory while trying to allocate", NULL, VT_OOM_FW_XLA, "xla_oom", parse_xla_oom},
	{"Failed to allocate request for", NULL, VT_OOM_FW_XLA, "xla_request", parse_xla_request},
	{"CUDA out of memory", NULL, VT_OOM_FW_PYTORCH, "pytorch", parse_pytorch},
	{"ran out of memory trying to allocate", "not a failure", VT_OOM_FW_TENSORFLOW, "tf_bfc",
	 parse_tf_bfc},
	{"ResourceExhaustedError", NULL, VT_OOM_FW_TENSORFLOW, "tf_exception", parse_nothing},
};

/* Every phrase above holds "lloc", "memory" or "Exhaust": one cheap pass
 * rules out almost every line a job prints (the full table costs a memmem
 * per row, too slow for a job that logs hundreds of MB). */
static int may_match(const char *p, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++) {
		switch (p[i]) {
		case 'l':
			if (!memcmp(p + i, "lloc", 4))
				return 1;
			break;
		case 'm':
			if (i + 6 <= n && !memcmp(p + i, "memory", 6))
				return 1;
			break;
		case 'E':
			if (i + 7 <= n && !memcmp(p + i, "Exhaust", 7))
				return 1;
			break;
		default:
			break;
		}
	}
	return 0;
}

int vt_oom_match_line(const char *line, size_t len, struct vt_oom_message *out)
{
	struct span s = {line, line + len};
	if (!may_match(line, len))
		return 0;
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		const struct oom_format *f = &formats[i];
		if (!find(s, f->phrase) || (f->veto && find(s, f->veto)))
			continue;
		memset(out, 0, sizeof *out);
		out->framework = f->framework;
		out->format = f->name;
		out->device = -1;
		f->parse(s, out);
		/* TensorFlow runs out of host memory with the same words */
		out->host = out->device < 0 && (find(s, "device:CPU:") || find(s, "Allocator (cpu") ||
		                                find(s, "Allocator (mklcpu"));
		return 1;
	}
	return 0;
}

const char *vt_oom_framework_name(int framework)
{
	switch (framework) {
	case VT_OOM_FW_TENSORFLOW: return "tensorflow";
	case VT_OOM_FW_XLA: return "xla";
	case VT_OOM_FW_PYTORCH: return "pytorch";
	default: return "unknown";
	}
}

/* ---- the stream ------------------------------------------------------------ */

void vt_stderr_scan_init(struct vt_stderr_scan *s, vt_scan_fn fn, void *ctx)
{
	memset(s, 0, sizeof *s);
	s->fn = fn;
	s->ctx = ctx;
}

static void end_line(struct vt_stderr_scan *s)
{
	struct vt_oom_message msg;
	s->lines++;
	if (s->len && vt_oom_match_line(s->line, s->len, &msg)) {
		s->matches++;
		if (s->fn)
			s->fn(s->line, s->len, &msg, s->ctx);
	}
	s->len = 0;
}

void vt_stderr_scan_feed(struct vt_stderr_scan *s, const void *buf, size_t n)
{
	const char *p = buf, *end = p + n;
	while (p < end) {
		const char *nl = p;
		while (nl < end && *nl != '\n' && *nl != '\r')
			nl++;
		size_t take = (size_t)(nl - p), room = sizeof s->line - s->len;
		memcpy(s->line + s->len, p, take < room ? take : room);
		s->len += take < room ? take : room; /* the rest of a long line is dropped */
		if (nl == end)
			return;
		end_line(s);
		p = nl + 1;
	}
}

void vt_stderr_scan_finish(struct vt_stderr_scan *s)
{
	if (s->len)
		end_line(s);
}
