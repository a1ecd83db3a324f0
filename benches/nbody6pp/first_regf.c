/* Linked into an NBODY6++GPU program with -Wl,--wrap=gpunb_regf_ (a link-line change, no
 * source edit): passes every call through and writes the first one's inputs and lists
 * (and its regular forces) to first_regf.txt, so two programs' first regular blocks can
 * be compared entry by entry. */
#include <stdio.h>

void __real_gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                        double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list, int *m_flag);

void __wrap_gpunb_regf_(int *ni, double h2[], double dtr[], double xi[][3], double vi[][3], double acc[][3],
                        double jrk[][3], double pot[], int *lmax, int *nnbmax, int *list, int *m_flag) {
    static int calls = 0;
    __real_gpunb_regf_(ni, h2, dtr, xi, vi, acc, jrk, pot, lmax, nnbmax, list, m_flag);
    if (calls++ > 0) return;
    FILE *f = fopen("first_regf.txt", "w");
    if (!f) return;
    fprintf(f, "# ni %d lmax %d nnbmax %d m_flag %d\n", *ni, *lmax, *nnbmax, *m_flag);
    for (int i = 0; i < *ni; ++i) {
        const int *l = list + (size_t)i * *lmax;
        fprintf(f, "%d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %d", i, h2[i], dtr[i], xi[i][0],
                xi[i][1], xi[i][2], acc[i][0], acc[i][1], acc[i][2], pot[i], jrk[i][0], l[0]);
        for (int k = 1; k <= l[0]; ++k) fprintf(f, " %d", l[k]);
        fputc('\n', f);
    }
    fclose(f);
}
