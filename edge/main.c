/* edge/main.c — wt-edge entry point (placeholder until the edge daemon lands). */
#include <stdio.h>
int main(void) { fprintf(stderr, "wt-edge: not yet implemented\n"); return 1; }
