/* cli/main.c — wtctl entry point (placeholder until the CLI lands). */
#include <stdio.h>
int main(void) { fprintf(stderr, "wtctl: not yet implemented\n"); return 1; }
