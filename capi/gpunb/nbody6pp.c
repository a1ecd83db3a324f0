/* NBODY6++GPU's regular-force names (nbody6ppgpu/Nbody6PPGPU-beijing, src/Main/gpunb.velocity.cu
 * and gpupot.gpu.cu) over libnbody_c: link libnbody_gpunb_nbody6pp.a, then libnbody_c. */
#define WITH_IRANK
#include "common.h"

void gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                 double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list, int *m_flag) {
    int flags = *m_flag ? NBODY_GPUNB_MASS_SCALED : 0;
    GPUNB_CALL(nbody_gpunb_regf(2048, flags, *ni, h2, dtr, (const double(*)[3])xi, (const double(*)[3])vi,
                                acc, jrk, pot, *lmax, *nnbmax, list));
}
void gpunb_profile_(int *irank) { GPUNB_CALL(nbody_gpunb_profile(*irank)); }
