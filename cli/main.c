/* cli/main.c — wtctl entry point; everything else is in libwtcli (cli.c). */
#include <stdlib.h>

#include "cli.h"

static const char *env(const char *name)
{
	return getenv(name);
}

int main(int argc, char **argv)
{
	return cli_main(argc, argv, env);
}
