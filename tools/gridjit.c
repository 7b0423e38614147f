/* Placeholder until the CLI lands. */
#include <stdio.h>
int main(void) {
    puts("gridjit: not built yet");
    return 1;
}
