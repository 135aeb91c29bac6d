/* Stand-in for <kunit/visibility.h> without CONFIG_KUNIT: the test includes sa_redirect.c. */
#ifndef SHIM_KUNIT_VISIBILITY_H
#define SHIM_KUNIT_VISIBILITY_H
#define VISIBLE_IF_KUNIT static
#define EXPORT_SYMBOL_IF_KUNIT(symbol)
#endif
