/* Linked into the manual's Figure 4 node program with
 * -Wl,--wrap=setarc0,--wrap=bcast0,--wrap=close0 so that a test sees the
 * sweep the node takes part in (the figure prints nothing): each
 * setarc0's processor count and the problem size bcast0 brings, printed
 * when the node closes. */
#include <stdio.h>
#include "picl.h"

void __real_setarc0(int *nprocs, int *top, int *ord, int *dir);
void __real_bcast0(void *buf, int bytes, int type, int root);
void __real_close0(int release);

static char line[4096];
static int used;

void __wrap_setarc0(int *nprocs, int *top, int *ord, int *dir)
{
    __real_setarc0(nprocs, top, ord, dir);
    if (used < (int)sizeof line - 32)
        used += sprintf(line + used, " p%d", *nprocs);
}

void __wrap_bcast0(void *buf, int bytes, int type, int root)
{
    __real_bcast0(buf, bytes, type, root);
    if (bytes == (int)sizeof(int) && used < (int)sizeof line - 32)
        used += sprintf(line + used, "/n%d", *(int *)buf);
}

void __wrap_close0(int release)
{
    printf("sweep:%s\n", line);
    __real_close0(release);
}
