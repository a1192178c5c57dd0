/* hub/main.c — wt-hub entry point (placeholder until the hub lands). */
#include <stdio.h>
int main(void) { fprintf(stderr, "wt-hub: not yet implemented\n"); return 1; }
