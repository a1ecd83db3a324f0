/* nbody's GRAPE-6 drop-in: the g6_* functions Sapporo2 exports, on libnbody_c.
 * C spellings take scalars by value; Fortran spellings (trailing underscore) take every
 * argument by reference. Double precision, G = 1. Executor: NBODY_GRAPE_EXECUTOR
 * (cpu, mixed, cuda, cuda:N) and NBODY_GRAPE_THREADS. Failures print "nbody grape: ..."
 * to stderr and return -1 (see nbody_last_error in nbody.h). No GRAPE-6 call carries a
 * softening per particle (eps2 is one value per call). */
#ifndef NBODY_GRAPE6_H
#define NBODY_GRAPE6_H
#ifdef __cplusplus
extern "C" {
#endif

int g6_open(int id);
int g6_open_special(int ndev, const int list[]); /* cluster 0 on GPUs list[0..ndev); ndev <= 0: g6_open(0) */
int g6_close(int id);
int g6_npipes(void);
int g6_set_ti(int id, double ti);
int g6_set_j_particle(int id, int address, int index, double tj, double dtj, double mass, const double k18[3],
                      const double j6[3], const double a2[3], const double v[3], const double x[3]);
int g6_initialize_jp_buffer(int id, int size);
int g6_flush_jp_buffer(int id);
int g6_reset(int id);
int g6_reset_fofpga(int id);
int g6_set_tunit(int tunit); /* fixed-point units of the GRAPE-6 hardware: accepted, no effect */
int g6_set_xunit(int xunit);
int g6_set_neighbour_list_sort_mode(int mode); /* lists always come sorted: accepted, no effect */
int g6_set_overflow_flag_test_mode(int aflag, int jflag, int pflag); /* no fixed-point overflow here: no effect */
void g6calc_firsthalf(int id, int nj, int ni, const int index[], const double xi[][3], const double vi[][3],
                      const double aold[][3], const double j6old[][3], const double phiold[], double eps2,
                      const double h2[]);
int g6calc_lasthalf(int id, int nj, int ni, const int index[], const double xi[][3], const double vi[][3],
                    double eps2, const double h2[], double acc[][3], double jerk[][3], double pot[]);
int g6calc_lasthalf2(int id, int nj, int ni, const int index[], const double xi[][3], const double vi[][3],
                     double eps2, const double h2[], double acc[][3], double jerk[][3], double pot[], int nnb[]);
int g6_read_neighbour_list(int id);
int g6_get_neighbour_list(int id, int ipipe, int maxlength, int *n_neighbours, int list[]);

int g6_open_(const int *id);
int g6_open_special_(const int *ndev, const int list[]);
int g6_close_(const int *id);
int g6_npipes_(void);
int g6_set_ti_(const int *id, const double *ti);
int g6_set_j_particle_(const int *id, const int *address, const int *index, const double *tj, const double *dtj,
                       const double *mass, const double k18[3], const double j6[3], const double a2[3],
                       const double v[3], const double x[3]);
int g6_initialize_jp_buffer_(const int *id, const int *size);
int g6_flush_jp_buffer_(const int *id);
int g6_reset_(const int *id);
int g6_reset_fofpga_(const int *id);
int g6_set_tunit_(const void *tunit); /* int * (GRAPE-6) or double * (Sapporo2); never read */
int g6_set_xunit_(const void *xunit);
int g6_set_neighbour_list_sort_mode_(const int *mode);
int g6_set_overflow_flag_test_mode_(const int *aflag, const int *jflag, const int *pflag);
void g6calc_firsthalf_(const int *id, const int *nj, const int *ni, const int index[], const double xi[][3],
                       const double vi[][3], const double aold[][3], const double j6old[][3], const double phiold[],
                       const double *eps2, const double h2[]);
int g6calc_lasthalf_(const int *id, const int *nj, const int *ni, const int index[], const double xi[][3],
                     const double vi[][3], const double *eps2, const double h2[], double acc[][3], double jerk[][3],
                     double pot[]);
int g6calc_lasthalf2_(const int *id, const int *nj, const int *ni, const int index[], const double xi[][3],
                      const double vi[][3], const double *eps2, const double h2[], double acc[][3],
                      double jerk[][3], double pot[], int nnb[]);
int g6_read_neighbour_list_(const int *id);
int g6_get_neighbour_list_(const int *id, const int *ipipe, const int *maxlength, int *n_neighbours, int list[]);

#ifdef __cplusplus
}
#endif
#endif
