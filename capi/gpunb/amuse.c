/* AMUSE's NBODY6++ regular-force names (amuse-nbody6xx 2024.6.0, src/amuse/community/nbody6xx/src:
 * gpunb.gpu.cu and gpupot.gpu.cu) over libnbody_c: link libnbody_gpunb_amuse.a, then libnbody_c. */
#define WITH_IRANK
#include "common.h"

void gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                 double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list) {
    GPUNB_CALL(nbody_gpunb_regf(1024, 0, *ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc,
                                jrk, pot, *lmax, *nnbmax, list));
}
