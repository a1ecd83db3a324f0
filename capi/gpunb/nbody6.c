/* NBODY6/GPU's regular-force names (Nitadori and Aarseth's GPU2 library: gpunb_open_(nbmax),
 * no irank, the sphere scaled by the source's mass, an overflowed list's count written as -1)
 * over libnbody_c: link libnbody_gpunb_nbody6.a, then libnbody_c. */
#include "common.h"

void gpunb_open_(int *nbmax) {
    GPUNB_CALL(nbody_gpunb_devinit(0));
    GPUNB_CALL(nbody_gpunb_open(*nbmax));
}
void gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                 double jrk[][3], double pot[], int *lmax, int *nbmax, int *list) {
    int flags = NBODY_GPUNB_MASS_SCALED | NBODY_GPUNB_OVERFLOW_MINUS_ONE;
    GPUNB_CALL(nbody_gpunb_regf(1024, flags, *ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi,
                                acc, jrk, pot, *lmax, *nbmax, list));
}
