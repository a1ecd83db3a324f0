/* AMUSE's NBODY6++ regular-force names (amuse-nbody6xx 2024.6.0, src/amuse/community/nbody6xx/src:
 * gpunb.gpu.cu and gpupot.gpu.cu) over libnbody_c: link libnbody_gpunb_amuse.a, then libnbody_c. */
#include "gpunb.h"
#include "stop.h"

void gpunb_devinit_(int *irank) { GPUNB_CALL(nbody_gpunb_devinit(*irank)); }
void gpunb_open_(int *nbmax, int *irank) {
    GPUNB_CALL(nbody_gpunb_devinit(*irank));
    GPUNB_CALL(nbody_gpunb_open(*nbmax));
}
void gpunb_close_(void) { GPUNB_CALL(nbody_gpunb_close()); }
void gpunb_send_(int *nj, double mj[], double xj[][3], double vj[][3]) {
    GPUNB_CALL(nbody_gpunb_send(*nj, mj, (const double(*)[3])xj, (const double(*)[3])vj));
}
void gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                 double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list) {
    GPUNB_CALL(nbody_gpunb_regf(1024, 0, *ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi, acc,
                             jrk, pot, *lmax, *nnbmax, list));
}
void gpupot_(int *irank, int *istart, int *ni, int *n, double m[], double x[][3], double pot[]) {
    GPUNB_CALL(nbody_gpunb_devinit(*irank));
    GPUNB_CALL(nbody_gpunb_potential(*istart, *ni, *n, m, (const double(*)[3])x, pot));
}
