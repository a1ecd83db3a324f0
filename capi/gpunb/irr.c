/* NBODY6++GPU's irregular-force names (nbody6ppgpu/Nbody6PPGPU-beijing, src/Main/irr.avx.cpp
 * and irr.sse.cpp) over libnbody_c: link libnbody_irr_nbody6pp.a, then libnbody_c. */
#include "gpunb.h"
#include "stop.h"

void irr_simd_open_(int *nmax, int *lmax, int *rank) { GPUNB_CALL(nbody_irr_open(*nmax, *lmax, *rank)); }
void irr_simd_close_(int *rank) { GPUNB_CALL(nbody_irr_close(*rank)); }
void irr_simd_profile_(int *rank) { GPUNB_CALL(nbody_irr_profile(*rank)); }
void irr_simd_set_jp_(int *addr, double pos[3], double vel[3], double acc2[3], double jrk6[3], double *mass,
                      double *time) {
    GPUNB_CALL(nbody_irr_set_jp(*addr, pos, vel, acc2, jrk6, *mass, *time));
}
void irr_simd_set_list_(int *addr, int *nblist) { GPUNB_CALL(nbody_irr_set_list(*addr, nblist)); }
void irr_simd_firr_vec_(double *ti, int *ni, int addr[], double acc[][3], double jrk[][3], int nnbid[]) {
    GPUNB_CALL(nbody_irr_firr_vec(*ti, *ni, addr, acc, jrk, nnbid));
}
