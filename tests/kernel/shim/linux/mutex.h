#ifndef SHIM_LINUX_MUTEX_H
#define SHIM_LINUX_MUTEX_H
#include <linux/kernel.h>
struct mutex {
	int held;
};
#define DEFINE_MUTEX(m) struct mutex m
#define mutex_lock(m) ((m)->held++)
#define mutex_unlock(m) ((m)->held--)
#endif
