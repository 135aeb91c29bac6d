#ifndef SHIM_LINUX_MODULEPARAM_H
#define SHIM_LINUX_MODULEPARAM_H
#include <linux/kernel.h>
struct kernel_param;
struct kernel_param_ops {
	int (*set)(const char *val, const struct kernel_param *kp);
	int (*get)(char *buffer, const struct kernel_param *kp);
};
struct kernel_param {
	const char *name;
};
/* the test reaches the parameters through these */
#define module_param(name, type, perm) \
	unsigned int *shim_param_##name = &name
#define module_param_named(name, value, type, perm) \
	unsigned int *shim_param_##name = &value
#define module_param_cb(name, ops, arg, perm) \
	const struct kernel_param_ops *shim_param_##name = ops
#define MODULE_PARM_DESC(name, desc) \
	extern const char shim_desc_##name[]
#endif
