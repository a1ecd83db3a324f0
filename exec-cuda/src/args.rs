//! The kernels' arguments as typed structs: every exported kernel of gravity.cu takes
//! one struct by value, declared in kernels/args.h and here with the same fields in the
//! same order (`#[repr(C)]`). [`CudaExecutor::launch`] takes a [`Kernel`] and the struct
//! its family takes, and refuses any other, so a launch cannot pass arguments the kernel
//! does not read the way it was given them.
//!
//! Checked twice: the unit test below reads args.h and compares every struct field by
//! field (name, order, C type, offset, size, for T = f32 and f64) without a GPU;
//! [`probe_layouts`] (feature `testing`, run by the conformance suite) asks the GPU's
//! compiler for each struct's size and offsets.

use crate::device::cuda;
use crate::kernels::Kernel;
use crate::{CudaExecutor, DeviceReal};
use cust::function::{BlockSize, Function, GridSize};
use cust::memory::{DeviceCopy, DevicePointer};
use nbody_core::Error;

/// A device address as the kernels take it (`T *`, `const u32 *`, ...): the element type
/// lives in the C declaration, which the layout check compares.
pub(crate) type Ptr = DevicePointer<u8>;

/// The null address, for buffers a launch does not touch.
pub(crate) fn null() -> Ptr {
    DevicePointer::null()
}

/// One field of an argument struct as the layout checks see it.
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldLayout {
    pub(crate) name: &'static str,
    /// The C type args.h declares (`T` for the struct's precision).
    pub(crate) c_type: &'static str,
    pub(crate) offset: usize,
    pub(crate) size: usize,
}

/// A kernel argument struct: its C name (without the template argument) and layout.
pub(crate) trait KernelArgs: DeviceCopy {
    /// The struct's name in args.h.
    const C_NAME: &'static str;
    /// Its fields in declaration order.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    fn fields() -> Vec<FieldLayout>;
}

/// Declares an argument struct: `#[repr(C)]`, `DeviceCopy`, and its [`KernelArgs`]
/// layout, each field with the C type args.h gives it.
macro_rules! kernel_args {
    ($(#[$m:meta])* struct $name:ident $(<$t:ident>)? as $cname:literal {
        $($(#[$fm:meta])* $field:ident : $ty:ty = $cty:literal),* $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name $(<$t: DeviceReal>)? {
            $($(#[$fm])* pub(crate) $field: $ty),*
        }

        // SAFETY: device addresses, numbers and nested argument structs only, laid out
        // as the kernel's struct (checked by the layout tests).
        unsafe impl $(<$t: DeviceReal>)? DeviceCopy for $name $(<$t>)? {}

        impl $(<$t: DeviceReal>)? KernelArgs for $name $(<$t>)? {
            const C_NAME: &'static str = $cname;
            fn fields() -> Vec<FieldLayout> {
                vec![$(FieldLayout {
                    name: stringify!($field),
                    c_type: $cty,
                    offset: core::mem::offset_of!(Self, $field),
                    size: size_of::<$ty>(),
                }),*]
            }
        }
    };
}

kernel_args! {
    /// What a jerk launch writes besides its outputs: partial sums of a source-split
    /// launch and the neighbour buffers (null where unused). Addresses only, so one
    /// layout serves both precisions.
    struct JerkExtra as "JerkExtra" {
        acc_part: Ptr = "typename V4<T>::type *",
        jerk_part: Ptr = "typename V4<T>::type *",
        near_part: Ptr = "int *",
        h2: Ptr = "const T *",
        counts: Ptr = "u32 *",
        lists: Ptr = "u32 *",
        capacity: i32 = "int",
        near_index: Ptr = "int *",
        near_r2: Ptr = "T *",
        own: Ptr = "const int *",
        /// Per target, a look-ahead step dt: a source is also listed where
        /// |dx + dt dv|² ≤ h2 (null: none).
        ahead: Ptr = "const T *",
        /// Nonzero: the listed sources are left out of the sums.
        exclude: i32 = "int",
        /// Per target, a squared radius within which (now or looked ahead) a listed
        /// source is surely a neighbour: its entry carries the top bit (null: none).
        inside: Ptr = "const T *",
    }
}

kernel_args! {
    /// The tiled, warp-shuffle and tiled-reduce kernels.
    struct TiledArgs<T> as "TiledArgs" {
        targets: Ptr = "const typename V4<T>::type *",
        sources: Ptr = "const typename V4<T>::type *",
        out: Ptr = "typename V4<T>::type *",
        partial: Ptr = "typename V4<T>::type *",
        /// Per-particle softening of the targets and the (padded) sources as the kernels
        /// read it (null with one softening).
        lengths_t: Ptr = "const T *",
        lengths_s: Ptr = "const T *",
        /// Mixed: the launch's error estimates (one float per chunk and target) and the
        /// list of targets summed again in f64 (a count, then their indices); null
        /// otherwise.
        estimate: Ptr = "float *",
        redo: Ptr = "int *",
        eps2: T = "T",
        g: T = "T",
        n_targets: i32 = "int",
        n_sources_padded: i32 = "int",
        self_t0: i32 = "int",
        self_len: i32 = "int",
        /// Sources per block row of a split launch; the reduction: the number of chunks.
        chunk: i32 = "int",
    }
}

kernel_args! {
    /// The jerk kernels and their reduction.
    struct JerkArgs<T> as "JerkArgs" {
        targets: Ptr = "const typename V4<T>::type *",
        target_vel: Ptr = "const typename V4<T>::type *",
        sources: Ptr = "const typename V4<T>::type *",
        source_vel: Ptr = "const typename V4<T>::type *",
        out: Ptr = "typename V4<T>::type *",
        jerk: Ptr = "typename V4<T>::type *",
        eps2: T = "T",
        g: T = "T",
        n_targets: i32 = "int",
        n_sources: i32 = "int",
        n_sources_padded: i32 = "int",
        /// Sources per block row of a split launch; the reduction: the number of chunks.
        chunk: i32 = "int",
        self_t0: i32 = "int",
        self_s0: i32 = "int",
        self_len: i32 = "int",
        x: JerkExtra = "JerkExtra<T>",
    }
}

kernel_args! {
    /// The batched kernel and its self-potential fix-up.
    struct BatchArgs<T> as "BatchArgs" {
        particles: Ptr = "const typename V4<T>::type *",
        items: Ptr = "const Item *",
        spans: Ptr = "const Span *",
        offset: Ptr = "const u32 *",
        self_count: Ptr = "const u32 *",
        out: Ptr = "typename V4<T>::type *",
        /// Per-particle softening as the kernels read it (null with one softening).
        lengths: Ptr = "const T *",
        /// Per item: its block of partial sums, or `NO_SLOT` (null: every item adds
        /// atomically).
        slots: Ptr = "const u32 *",
        partial: Ptr = "typename V4<T>::type *",
        eps2: T = "T",
        g: T = "T",
        n: i32 = "int",
    }
}

kernel_args! {
    /// The batched cell kernel.
    struct CellArgs<T> as "CellArgs" {
        particles: Ptr = "const typename V4<T>::type *",
        cells: Ptr = "const CellRec<T> *",
        items: Ptr = "const Item *",
        spans: Ptr = "const Span *",
        offset: Ptr = "const u32 *",
        out: Ptr = "typename V4<T>::type *",
        /// As [`BatchArgs`]'s.
        slots: Ptr = "const u32 *",
        partial: Ptr = "typename V4<T>::type *",
        eps2: T = "T",
        g: T = "T",
        n: i32 = "int",
    }
}

kernel_args! {
    /// Kick (`a` velocities, `b` accelerations) and drift (`a` positions, `b` velocities).
    struct StepArgs<T> as "StepArgs" {
        a: Ptr = "typename V4<T>::type *",
        b: Ptr = "const typename V4<T>::type *",
        h: T = "T",
        n: i32 = "int",
    }
}

kernel_args! {
    /// Packing rows and a column into records, and unpacking records into rows and a
    /// column (see [`crate::columns`]).
    struct ColumnsArgs as "ColumnsArgs" {
        records: Ptr = "typename V4<T>::type *",
        rows: Ptr = "T *",
        column: Ptr = "T *",
        first_bad: Ptr = "int *",
        n: i32 = "int",
        padded: i32 = "int",
    }
}

kernel_args! {
    /// The density map (of either precision: the particles' type is the pointer's).
    struct ProjectArgs as "ProjectArgs" {
        particles: Ptr = "const typename V4<T>::type *",
        grid: Ptr = "double *",
        left: f64 = "double",
        top: f64 = "double",
        scale: f64 = "double",
        n: i32 = "int",
        pixels: i32 = "int",
        h_axis: i32 = "int",
        v_axis: i32 = "int",
    }
}

kernel_args! {
    /// A resident system's diagnostic sums (either precision: the particles' type is
    /// the pointers'), a row of twelve doubles per block.
    struct SumsArgs as "SumsArgs" {
        pos: Ptr = "const typename V4<T>::type *",
        vel: Ptr = "const typename V4<T>::type *",
        field: Ptr = "const typename V4<T>::type *",
        partial: Ptr = "double *",
        n: i32 = "int",
    }
}

kernel_args! {
    /// The Hermite predictor, gather and corrector (either precision: the state's type
    /// is the pointers'; times and step parameters are double in both).
    struct HermiteArgs as "HermiteArgs" {
        pos: Ptr = "typename V4<T>::type *",
        vel: Ptr = "typename V4<T>::type *",
        acc: Ptr = "typename V4<T>::type *",
        jerk: Ptr = "typename V4<T>::type *",
        tj: Ptr = "double *",
        ppos: Ptr = "typename V4<T>::type *",
        pvel: Ptr = "typename V4<T>::type *",
        idx: Ptr = "const u32 *",
        tpos: Ptr = "typename V4<T>::type *",
        tvel: Ptr = "typename V4<T>::type *",
        field: Ptr = "typename V4<T>::type *",
        jerk_out: Ptr = "typename V4<T>::type *",
        want: Ptr = "double *",
        t: f64 = "double",
        eta: f64 = "double",
        dt_max: f64 = "double",
        dt_min: f64 = "double",
        n: i32 = "int",
        na: i32 = "int",
        start: i32 = "int",
        block: i32 = "int",
    }
}

kernel_args! {
    /// The GRAPE-6 j-memory's scatter and place kernels.
    struct JmemArgs as "JmemArgs" {
        address: Ptr = "const u32 *",
        rec: Ptr = "const double4 *",
        own: Ptr = "const int *",
        tpos: Ptr = "const double4 *",
        tvel: Ptr = "const double4 *",
        pos: Ptr = "double4 *",
        vel: Ptr = "double4 *",
        acc: Ptr = "double4 *",
        jerk: Ptr = "double4 *",
        tj: Ptr = "double *",
        field: Ptr = "double4 *",
        jerk_out: Ptr = "double4 *",
        k: i32 = "int",
    }
}

kernel_args! {
    /// The neighbour-list packing kernel.
    struct ListsArgs as "ListsArgs" {
        counts: Ptr = "const u32 *",
        lists: Ptr = "const u32 *",
        near_index: Ptr = "const int *",
        meta: Ptr = "u32 *",
        compact: Ptr = "u32 *",
        capacity: i32 = "int",
        n: i32 = "int",
    }
}

kernel_args! {
    /// The device tree's kernels (args.h's TREE_ARGS_FIELDS; see [`crate::tree`]).
    struct TreeArgs<T> as "TreeArgs" {
        particles: Ptr = "const typename V4<T>::type *",
        sorted: Ptr = "typename V4<T>::type *",
        sorted_out: Ptr = "typename V4<T>::type *",
        out: Ptr = "typename V4<T>::type *",
        keys: Ptr = "unsigned long long *",
        index: Ptr = "u32 *",
        bounds: Ptr = "unsigned long long *",
        counters: Ptr = "u32 *",
        tally: Ptr = "unsigned long long *",
        nodes: Ptr = "TreeNode *",
        parent: Ptr = "u32 *",
        arrivals: Ptr = "u32 *",
        moments: Ptr = "double *",
        cells: Ptr = "CellRec<T> *",
        opening: Ptr = "typename V4<T>::type *",
        groups: Ptr = "Span *",
        counts: Ptr = "unsigned long long *",
        item_counts: Ptr = "unsigned long long *",
        span_at: Ptr = "const unsigned long long *",
        item_at: Ptr = "const unsigned long long *",
        items: Ptr = "Item *",
        spans: Ptr = "Span *",
        offset: Ptr = "u32 *",
        cell_items: Ptr = "Item *",
        cell_index: Ptr = "u32 *",
        stack: Ptr = "u32 *",
        previous: Ptr = "const typename V4<T>::type *",
        scratch: Ptr = "u32 *",
        locals: Ptr = "T *",
        node_super: Ptr = "u32 *",
        group_super: Ptr = "u32 *",
        supers: Ptr = "u32 *",
        super_rec: Ptr = "T *",
        super_front: Ptr = "u32 *",
        slots: Ptr = "u32 *",
        cell_slots: Ptr = "u32 *",
        runs: Ptr = "Item *",
        cell_runs: Ptr = "Item *",
        theta: T = "T",
        alpha: T = "T",
        g: T = "T",
        eps2: T = "T",
        local_theta: T = "T",
        n: i32 = "int",
        capacity: i32 = "int",
        leaf_size: i32 = "int",
        group_size: i32 = "int",
        level: i32 = "int",
        opening_side: i32 = "int",
        quadrupole: i32 = "int",
        relative: i32 = "int",
        potential: i32 = "int",
        scratch_cells: i32 = "int",
        scratch_spans: i32 = "int",
        cap_spans: i32 = "int",
        cap_cells: i32 = "int",
        cap_items: i32 = "int",
        cap_cell_items: i32 = "int",
        super_size: i32 = "int",
        front_cap: i32 = "int",
        cap_slots: i32 = "int",
        cap_runs: i32 = "int",
        cap_cell_runs: i32 = "int",
        split_sources: i32 = "int",
        split_cells: i32 = "int",
        self_term: i32 = "int",
    }
}

kernel_args! {
    /// The gradient kernels (args.h's GRAD_ARGS_FIELDS; see [`crate::gradients`]).
    struct GradArgs<T> as "GradArgs" {
        targets: Ptr = "const typename V4<T>::type *",
        sources: Ptr = "const typename V4<T>::type *",
        cot: Ptr = "const typename V4<T>::type *",
        out: Ptr = "typename V4<T>::type *",
        tidal: Ptr = "T *",
        grad: Ptr = "typename V4<T>::type *",
        arg: T = "T",
        h_inv: T = "T",
        w0: T = "T",
        g0: T = "T",
        g: T = "T",
        n_targets: i32 = "int",
        n_sources: i32 = "int",
        self_t0: i32 = "int",
        self_s0: i32 = "int",
        self_len: i32 = "int",
        potential: i32 = "int",
        partial: Ptr = "double *",
        chunk: i32 = "int",
        /// The pair kernels' slot rows ([`crate::gradients`]).
        slots: Ptr = "typename V4<T>::type *",
        tiles: i32 = "int",
        band0: i32 = "int",
        band: i32 = "int",
        finish: i32 = "int",
    }
}

impl HermiteArgs {
    /// Every address null and every number zero: launches fill in what their kernel reads.
    pub(crate) fn empty() -> Self {
        HermiteArgs {
            pos: null(),
            vel: null(),
            acc: null(),
            jerk: null(),
            tj: null(),
            ppos: null(),
            pvel: null(),
            idx: null(),
            tpos: null(),
            tvel: null(),
            field: null(),
            jerk_out: null(),
            want: null(),
            t: 0.0,
            eta: 0.0,
            dt_max: 0.0,
            dt_min: 0.0,
            n: 0,
            na: 0,
            start: 0,
            block: 0,
        }
    }
}

impl JmemArgs {
    /// Every address null and the count zero.
    pub(crate) fn empty() -> Self {
        JmemArgs {
            address: null(),
            rec: null(),
            own: null(),
            tpos: null(),
            tvel: null(),
            pos: null(),
            vel: null(),
            acc: null(),
            jerk: null(),
            tj: null(),
            field: null(),
            jerk_out: null(),
            k: 0,
        }
    }
}

impl CudaExecutor {
    /// Queues `kernel` on the executor's stream with `args`, which must be the struct its
    /// family takes (else an [`Error::Device`] before anything runs: a mistake in this
    /// crate, which the tests catch).
    ///
    /// # Safety
    ///
    /// Every address in `args` points to device memory of this executor's context that
    /// holds what the kernel reads and writes for the counts in `args` and the grid, as
    /// args.h documents per struct; the buffers stay alive until the stream has run it.
    pub(crate) unsafe fn launch<A: KernelArgs>(
        &self,
        kernel: Kernel,
        grid: impl Into<GridSize>,
        block: impl Into<BlockSize>,
        args: A,
        what: &'static str,
    ) -> Result<(), Error> {
        let f = self.function(kernel)?;
        // SAFETY: passed on from the caller; `f` is `kernel`'s function.
        unsafe { self.launch_function(&f, kernel, grid, block, args, what) }
    }

    /// [`CudaExecutor::launch`] with `kernel`'s function already looked up.
    ///
    /// # Safety
    ///
    /// As [`CudaExecutor::launch`], and `f` is `kernel`'s function in this executor's
    /// module.
    pub(crate) unsafe fn launch_function<A: KernelArgs>(
        &self,
        f: &Function<'_>,
        kernel: Kernel,
        grid: impl Into<GridSize>,
        block: impl Into<BlockSize>,
        args: A,
        what: &'static str,
    ) -> Result<(), Error> {
        if kernel.args() != A::C_NAME {
            debug_assert!(false, "{} takes {}, not {} ({what})", kernel.name(), kernel.args(), A::C_NAME);
            // CUDA_ERROR_INVALID_VALUE, as the driver would say for a wrong parameter.
            return Err(Error::Device { during: "launching a kernel with another kernel's arguments", code: 1 });
        }
        let mut args = args;
        let params = [(&raw mut args).cast::<core::ffi::c_void>()];
        // SAFETY: the kernel takes one parameter, a struct laid out as `A` (the layout
        // tests); the caller vouches for the addresses in it.
        unsafe { self.gpu.stream().launch(f, grid, block, 0, &params) }.map_err(cuda(what))
    }
}

/// Every struct the probe kernel reports, in its order (args.h's `NBODY_PROBED`), with
/// its C name and fields.
#[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
pub(crate) fn probed() -> Vec<(&'static str, usize, Vec<FieldLayout>)> {
    fn one<A: KernelArgs>(label: &'static str) -> (&'static str, usize, Vec<FieldLayout>) {
        (label, size_of::<A>(), A::fields())
    }
    vec![
        one::<JerkExtra>("JerkExtra<float>"),
        one::<JerkExtra>("JerkExtra<double>"),
        one::<TiledArgs<f32>>("TiledArgs<float>"),
        one::<TiledArgs<f64>>("TiledArgs<double>"),
        one::<JerkArgs<f32>>("JerkArgs<float>"),
        one::<JerkArgs<f64>>("JerkArgs<double>"),
        one::<BatchArgs<f32>>("BatchArgs<float>"),
        one::<BatchArgs<f64>>("BatchArgs<double>"),
        one::<CellArgs<f32>>("CellArgs<float>"),
        one::<CellArgs<f64>>("CellArgs<double>"),
        one::<StepArgs<f32>>("StepArgs<float>"),
        one::<StepArgs<f64>>("StepArgs<double>"),
        one::<ColumnsArgs>("ColumnsArgs<float>"),
        one::<ColumnsArgs>("ColumnsArgs<double>"),
        one::<ProjectArgs>("ProjectArgs<float>"),
        one::<ProjectArgs>("ProjectArgs<double>"),
        one::<SumsArgs>("SumsArgs<float>"),
        one::<SumsArgs>("SumsArgs<double>"),
        one::<HermiteArgs>("HermiteArgs<float>"),
        one::<HermiteArgs>("HermiteArgs<double>"),
        one::<JmemArgs>("JmemArgs"),
        one::<ListsArgs>("ListsArgs"),
        one::<TreeArgs<f32>>("TreeArgs<float>"),
        one::<TreeArgs<f64>>("TreeArgs<double>"),
        one::<GradArgs<f32>>("GradArgs<float>"),
        one::<GradArgs<f64>>("GradArgs<double>"),
    ]
}

/// Runs gravity.cu's `nbody_probe_layouts` and compares each argument struct's size and
/// field offsets as the GPU's compiler laid them out with this crate's `#[repr(C)]`
/// structs. `Ok` lists what was compared; `Err` names the first difference.
///
/// ```no_run
/// let mut gpu = nbody_cuda::CudaExecutor::new()?;
/// let compared = nbody_cuda::probe_layouts(&mut gpu).expect("the layouts agree");
/// assert!(compared.len() > 10);
/// # Ok::<(), nbody_core::Error>(())
/// ```
#[cfg(feature = "testing")]
pub fn probe_layouts(gpu: &mut CudaExecutor) -> Result<Vec<String>, String> {
    let expected = probed();
    let words: usize = expected.iter().map(|(_, _, f)| 2 + f.len()).sum();
    let mut got = vec![-1i64; words + 1];
    gpu.probe(&mut got).map_err(|e| e.to_string())?;
    let mut k = 0;
    let mut compared = Vec::new();
    for (label, size, fields) in &expected {
        let (gsize, gcount) = (got[k], got[k + 1]);
        if gsize != *size as i64 || gcount != fields.len() as i64 {
            return Err(format!(
                "{label}: the GPU says {gsize} bytes and {gcount} fields, Rust {size} bytes and {} fields",
                fields.len()
            ));
        }
        for (i, f) in fields.iter().enumerate() {
            let goff = got[k + 2 + i];
            if goff != f.offset as i64 {
                return Err(format!("{label}.{}: offset {goff} on the GPU, {} in Rust", f.name, f.offset));
            }
        }
        compared.push(format!("{label}: {size} bytes, {} fields", fields.len()));
        k += 2 + fields.len();
    }
    if got[k] != -1 {
        return Err("the GPU reported more structs than Rust declares".into());
    }
    Ok(compared)
}

impl CudaExecutor {
    /// Runs the layout probe into `out` (one word per size, count and offset).
    #[cfg(feature = "testing")]
    fn probe(&mut self, out: &mut [i64]) -> Result<(), Error> {
        self.gpu.make_current()?;
        let mut buf = crate::memory::alloc(size_of_val(out))?;
        crate::memory::upload_padded(&mut buf, bytemuck::cast_slice(out), 0)?;
        let f = self.function(Kernel::ProbeLayouts)?;
        let (mut p, mut capacity) = (crate::memory::ptr(&buf), crate::kernels::count(out.len())?);
        let params = [(&raw mut p).cast::<core::ffi::c_void>(), (&raw mut capacity).cast::<core::ffi::c_void>()];
        // SAFETY: the probe writes at most `capacity` words of `buf`, which holds them.
        unsafe { self.gpu.stream().launch(&f, 1, 1, 0, &params) }.map_err(cuda("launching the layout probe"))?;
        self.gpu.stream().synchronize().map_err(cuda("running the layout probe"))?;
        crate::memory::download(&buf, bytemuck::cast_slice_mut(out))
    }
}

impl<T: DeviceReal> TreeArgs<T> {
    /// A tree kernel's arguments with every buffer null, every setting zero and `n`
    /// items: what a launch that reads a few buffers fills in.
    pub(crate) fn bare(n: i32) -> Self {
        Self {
            particles: null(),
            sorted: null(),
            sorted_out: null(),
            out: null(),
            keys: null(),
            index: null(),
            bounds: null(),
            counters: null(),
            tally: null(),
            nodes: null(),
            parent: null(),
            arrivals: null(),
            moments: null(),
            cells: null(),
            opening: null(),
            groups: null(),
            counts: null(),
            item_counts: null(),
            span_at: null(),
            item_at: null(),
            items: null(),
            spans: null(),
            offset: null(),
            cell_items: null(),
            cell_index: null(),
            stack: null(),
            previous: null(),
            scratch: null(),
            locals: null(),
            node_super: null(),
            group_super: null(),
            supers: null(),
            super_rec: null(),
            super_front: null(),
            slots: null(),
            cell_slots: null(),
            runs: null(),
            cell_runs: null(),
            theta: T::zero(),
            alpha: T::zero(),
            g: T::zero(),
            eps2: T::zero(),
            local_theta: T::zero(),
            n,
            capacity: 0,
            leaf_size: 0,
            group_size: 0,
            level: 0,
            opening_side: 0,
            quadrupole: 0,
            relative: 0,
            potential: 0,
            scratch_cells: 0,
            scratch_spans: 0,
            cap_spans: 0,
            cap_cells: 0,
            cap_items: 0,
            cap_cell_items: 0,
            super_size: 0,
            front_cap: 0,
            cap_slots: 0,
            cap_runs: 0,
            cap_cell_runs: 0,
            split_sources: 0,
            split_cells: 0,
            self_term: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// args.h's field lists: `#define NAME_FIELDS(F)` followed by `F(type, name)` lines.
    fn header_lists() -> Vec<(String, Vec<(String, String)>)> {
        let header = include_str!("../kernels/args.h");
        let mut lists: Vec<(String, Vec<(String, String)>)> = Vec::new();
        for line in header.lines() {
            let line = line.trim_end_matches('\\').trim();
            if let Some(rest) = line.strip_prefix("#define ") {
                if let Some(name) = rest.strip_suffix("(F)") {
                    lists.push((name.to_string(), Vec::new()));
                }
                continue;
            }
            if let (Some(body), Some((_, fields))) =
                (line.strip_prefix("F(").and_then(|b| b.strip_suffix(')')), lists.last_mut())
            {
                let (ty, name) = body.rsplit_once(',').expect("F(type, name)");
                fields.push((ty.trim().to_string(), name.trim().to_string()));
            }
        }
        lists
    }

    /// Which list each struct expands (`template <typename T> struct X { LIST(...) };`).
    fn struct_list(header: &str, c_name: &str) -> String {
        let at = header.find(&format!("struct {c_name} {{")).unwrap_or_else(|| panic!("args.h declares {c_name}"));
        let body = &header[at..];
        let open = body.find('{').unwrap() + 1;
        let list = body[open..].trim_start();
        list[..list.find('(').unwrap()].to_string()
    }

    /// Size and alignment of a C type of args.h with T = `t` (4 or 8 bytes).
    fn c_size(ty: &str, t: usize) -> usize {
        match ty {
            _ if ty.ends_with('*') => 8,
            "int" => 4,
            "double" => 8,
            "T" => t,
            _ => panic!("no size for C type {ty}"),
        }
    }

    /// (C type, name, offset, size) of each field.
    type CFields = Vec<(String, String, usize, usize)>;

    /// Lays out a field list as a C compiler does (natural alignment), nested structs
    /// (`JerkExtra<T>`) from their own lists.
    fn c_layout(lists: &[(String, Vec<(String, String)>)], list: &str, t: usize) -> (CFields, usize, usize) {
        let fields = &lists.iter().find(|(n, _)| n == list).unwrap_or_else(|| panic!("args.h defines {list}")).1;
        let (mut offset, mut align) = (0usize, 1usize);
        let mut out = Vec::new();
        for (ty, name) in fields {
            let (size, a) = if ty == "JerkExtra<T>" {
                let (_, size, a) = c_layout(lists, "JERK_EXTRA_FIELDS", t);
                (size, a)
            } else {
                let s = c_size(ty, t);
                (s, s)
            };
            offset = offset.next_multiple_of(a);
            out.push((ty.clone(), name.clone(), offset, size));
            offset += size;
            align = align.max(a);
        }
        (out, offset.next_multiple_of(align), align)
    }

    fn check<A: KernelArgs>(t: usize) {
        let header = include_str!("../kernels/args.h");
        let lists = header_lists();
        let list = struct_list(header, A::C_NAME);
        let (c_fields, c_size, _) = c_layout(&lists, &list, t);
        let rust = A::fields();
        assert_eq!(rust.len(), c_fields.len(), "{}: field count", A::C_NAME);
        for (r, (ty, name, offset, size)) in rust.iter().zip(&c_fields) {
            assert_eq!((r.name, r.c_type), (name.as_str(), ty.as_str()), "{}: field order or type", A::C_NAME);
            assert_eq!(
                (r.offset, r.size),
                (*offset, *size),
                "{}.{}: offset and size (T of {t} bytes)",
                A::C_NAME,
                r.name
            );
        }
        assert_eq!(size_of::<A>(), c_size, "{}: size (T of {t} bytes)", A::C_NAME);
    }

    #[test]
    fn every_struct_matches_the_header_field_by_field() {
        check::<JerkExtra>(4);
        check::<JerkExtra>(8);
        check::<TiledArgs<f32>>(4);
        check::<TiledArgs<f64>>(8);
        check::<JerkArgs<f32>>(4);
        check::<JerkArgs<f64>>(8);
        check::<BatchArgs<f32>>(4);
        check::<BatchArgs<f64>>(8);
        check::<CellArgs<f32>>(4);
        check::<CellArgs<f64>>(8);
        check::<StepArgs<f32>>(4);
        check::<StepArgs<f64>>(8);
        check::<ColumnsArgs>(4);
        check::<ColumnsArgs>(8);
        check::<ProjectArgs>(4);
        check::<ProjectArgs>(8);
        check::<SumsArgs>(4);
        check::<SumsArgs>(8);
        check::<HermiteArgs>(4);
        check::<HermiteArgs>(8);
        check::<JmemArgs>(8);
        check::<ListsArgs>(8);
        check::<TreeArgs<f32>>(4);
        check::<TreeArgs<f64>>(8);
        check::<GradArgs<f32>>(4);
        check::<GradArgs<f64>>(8);
    }

    #[test]
    fn the_probe_covers_every_struct_in_the_header_order() {
        let header = include_str!("../kernels/args.h");
        let at = header.find("#define NBODY_PROBED(P)").expect("args.h lists the probed structs");
        let probed_c: Vec<&str> =
            header[at..].lines().skip(1).map_while(|l| l.trim().strip_prefix("P(")?.split(',').next()).collect();
        let probed_rust: Vec<&str> = probed().iter().map(|(label, _, _)| *label).collect();
        assert_eq!(probed_c, probed_rust);
    }

    /// Each exported kernel's parameter in gravity.cu, by the name prefix it is exported
    /// under, against [`Kernel::args`].
    #[test]
    fn every_kernel_takes_the_struct_the_host_passes() {
        // gravity.cu and the kernels by job it includes.
        let source = [
            include_str!("../kernels/gravity.cu"),
            include_str!("../kernels/common.cuh"),
            include_str!("../kernels/mixed_frame.cuh"),
            include_str!("../kernels/tiles.cuh"),
            include_str!("../kernels/mixed_redo.cuh"),
            include_str!("../kernels/jerk.cuh"),
            include_str!("../kernels/batched.cuh"),
            include_str!("../kernels/cells.cuh"),
            include_str!("../kernels/shuffle.cuh"),
            include_str!("../kernels/entries.cuh"),
            include_str!("../kernels/columns.cuh"),
            include_str!("../kernels/hermite.cuh"),
            include_str!("../kernels/local.cuh"),
            include_str!("../kernels/tree.cuh"),
            include_str!("../kernels/gradients.cuh"),
        ]
        .concat();
        let parts = include_str!("../kernels/gravity.cu").matches(".cuh\"").count();
        assert_eq!(parts, 14, "gravity.cu includes {parts} kernel files: list each one above");
        // (prefix of the exported name, the struct its one parameter is)
        let mut exported: Vec<(String, String)> = Vec::new();
        for piece in source.split("extern \"C\" __global__ void").skip(1) {
            let head: String = piece.chars().take_while(|&c| c != '{').collect();
            let head = head.replace(['\\', '\n'], " ");
            let name_at = head.find("nbody_").expect("an nbody_ kernel");
            let name: String =
                head[name_at..].chars().take_while(|&c| c.is_alphanumeric() || c == '_' || c == '#').collect();
            let prefix = name.split("_##").next().unwrap().to_string();
            let after_name = &head[name_at..];
            let param = after_name[after_name.find('(').unwrap() + 1..].trim().trim_start_matches("const").trim();
            let ty: String = param.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
            exported.push((prefix, ty));
        }
        assert!(exported.len() >= 16, "found {exported:?}");
        for kernel in Kernel::samples() {
            let name = kernel.name();
            let (prefix, ty) = exported
                .iter()
                .filter(|(p, _)| name == *p || name.starts_with(&format!("{p}_")))
                .max_by_key(|(p, _)| p.len())
                .unwrap_or_else(|| panic!("gravity.cu exports no kernel named like {name}"));
            assert_eq!(ty, kernel.args(), "{name} (exported as {prefix}_...) takes {ty}");
        }
    }
}
