/* Driver placeholder: no state yet. */
#include "driver.h"

void gj__driver_release(struct gj__driver *driver) {
    (void)driver;
}
