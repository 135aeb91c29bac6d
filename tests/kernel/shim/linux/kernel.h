/* User-space stand-ins for the kernel API that sa_redirect.c uses. */
#ifndef SHIM_LINUX_KERNEL_H
#define SHIM_LINUX_KERNEL_H

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define U32_MAX UINT32_MAX
#define PAGE_SIZE 4096UL
typedef uint16_t __be16;

#define READ_ONCE(x) (x)
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max_t(type, a, b) max((type)(a), (type)(b))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define cpu_to_be16(x) __builtin_bswap16(x)
#define be16_to_cpu(x) __builtin_bswap16(x)

/* the kernel's ctype takes any char */
#define SHIM_CTYPE(f, c) f((unsigned char)(c))
#undef isspace
#undef isdigit
#undef tolower
#define isspace(c) SHIM_CTYPE(isspace, c)
#define isdigit(c) SHIM_CTYPE(isdigit, c)
#define tolower(c) SHIM_CTYPE(tolower, c)

/* as lib/kstrtox.c: optional '+', "0x" with base 16, one trailing newline */
static inline int kstrtou32(const char *s, unsigned int base, u32 *res)
{
	unsigned long long v = 0;
	int digits = 0;

	if (*s == '+')
		s++;
	if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, digits++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (d >= base)
			break;
		v = v * base + d;
		if (v > U32_MAX)
			return -ERANGE;
	}
	if (!digits)
		return -EINVAL;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	*res = (u32)v;
	return 0;
}

static inline int scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!size)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0)
		return 0;
	return (size_t)n >= size ? (int)size - 1 : n;
}

/* pr_warn() is recorded so that tests can check what was logged */
extern char shim_last_warning[512];
extern int shim_warnings;
#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif
#define pr_warn(fmt, ...) \
	(shim_warnings++, \
	 snprintf(shim_last_warning, sizeof(shim_last_warning), pr_fmt(fmt), \
		  ##__VA_ARGS__))

#endif
