/*
 * demangle.c — __cxa_demangle through dlopen (see demangle.h).
 */
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cxa_demangle_fn fn;

static void load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		*(void **)&fn = dlsym(h, "__cxa_demangle");
}

char *wt_demangle(const char *name)
{
	int status = 0;
	char *d;

	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	pthread_once(&once, load);
	if (!fn)
		return NULL;
	d = fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}
