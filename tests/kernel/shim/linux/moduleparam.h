#ifndef SHIM_LINUX_MODULEPARAM_H
#define SHIM_LINUX_MODULEPARAM_H
#include <linux/kernel.h>
struct kernel_param;
#define KERNEL_PARAM_OPS_FL_NOARG	(1 << 0)
struct kernel_param_ops {
	unsigned int flags;
	int (*set)(const char *val, const struct kernel_param *kp);
	int (*get)(char *buffer, const struct kernel_param *kp);
};
struct kernel_param {
	const char *name;
	void *arg;
};

static inline int param_set_uint(const char *val, const struct kernel_param *kp)
{
	/* base 0, as kstrtouint(val, 0, ...): "0x" is hex, else decimal here */
	unsigned int base = val[0] == '0' && (val[1] == 'x' || val[1] == 'X') ? 16 : 10;
	u32 v;
	int ret = kstrtou32(val, base, &v);

	if (!ret)
		*(unsigned int *)kp->arg = v;
	return ret;
}

static inline int param_get_uint(char *buffer, const struct kernel_param *kp)
{
	return sprintf(buffer, "%u\n", *(unsigned int *)kp->arg);
}

/* the test reaches the parameters through these */
#define module_param(name, type, perm) \
	unsigned int *shim_param_##name = &name
#define module_param_named(name, value, type, perm) \
	unsigned int *shim_param_##name = &value
#define module_param_cb(name, ops, arg, perm) \
	const struct kernel_param_ops *shim_param_##name = ops; \
	const struct kernel_param shim_kp_##name = { #name, arg }
#define MODULE_PARM_DESC(name, desc) \
	extern const char shim_desc_##name[]
#endif
