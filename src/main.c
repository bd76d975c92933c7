/* Placeholder until the command line lands. */
#include <stdio.h>
int main(void)
{
    puts("wsrelay " WSRELAY_VERSION);
    return 0;
}
