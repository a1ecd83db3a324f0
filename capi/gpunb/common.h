/* The names every code's library shares over libnbody_c: gpunb_close_ and gpunb_send_,
 * and, where WITH_IRANK is defined (NBODY6++'s codes), gpunb_devinit_,
 * gpunb_open_(nbmax, irank) and gpupot_. Included once by each code's file (each archive
 * holds one code's names). */
#ifndef NBODY_GPUNB_COMMON_H
#define NBODY_GPUNB_COMMON_H
#include "gpunb.h"
#include "stop.h"

void gpunb_close_(void) { GPUNB_CALL(nbody_gpunb_close()); }
void gpunb_send_(int *nj, double mj[], double xj[][3], double vj[][3]) {
    GPUNB_CALL(nbody_gpunb_send(*nj, mj, (const double(*)[3])xj, (const double(*)[3])vj));
}

#ifdef WITH_IRANK
void gpunb_devinit_(int *irank) { GPUNB_CALL(nbody_gpunb_devinit(*irank)); }
void gpunb_open_(int *nbmax, int *irank) {
    GPUNB_CALL(nbody_gpunb_devinit(*irank));
    GPUNB_CALL(nbody_gpunb_open(*nbmax));
}
void gpupot_(int *irank, int *istart, int *ni, int *n, double m[], double x[][3], double pot[]) {
    GPUNB_CALL(nbody_gpunb_devinit(*irank));
    GPUNB_CALL(nbody_gpunb_potential(*istart, *ni, *n, m, (const double(*)[3])x, pot));
}
#endif
#endif
