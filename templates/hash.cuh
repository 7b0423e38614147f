// ---------------------------------------------------------------------------
// gridjit: corner hashes (docs/design.md §5), the PCG32 generator and corner indexing (docs/design.md §4).
// ---------------------------------------------------------------------------
#ifndef GJ_HASH_CUH
#define GJ_HASH_CUH

// Values of gj_hash, gj_interpolation and the layout's index modes (src/model/layout.h).
#define GJ_HASH_PRIME 0
#define GJ_HASH_COHERENT_PRIME 1
#define GJ_HASH_REVERSED_PRIME 2
#define GJ_HASH_RNG 3
#define GJ_HASH_BASE_CONVERT 4

#define GJ_INTERP_NEAREST 0
#define GJ_INTERP_LINEAR 1
#define GJ_INTERP_SMOOTHSTEP 2

#define GJ_INDEX_DENSE 0 // sum_d v_d * res^d fits in 32 bits
#define GJ_INDEX_HASH 1  // hash(v)
#define GJ_INDEX_WRAP 2  // res^D overflows: the dense index taken exactly modulo the table size
// Or'ed into the index mode where the table size is a power of two: every index, hashed
// or dense (wrapping or not), is then taken with the level's mask, with no modulo code.
#define GJ_INDEX_POW2 4
#define GJ_INDEX_MODE_MAX 6 // the largest kind | GJ_INDEX_POW2
// Or'ed into the index mode by the device functions, whose level constants are literals:
// a modulo by the table size then compiles inline to a multiplication, with no call.
#define GJ_INDEX_LITERAL 8

// One level's constants: a row of the generated level table (the kernels read it from
// constant memory; the device functions build it from literals).
struct gj_level {
    gj_u64 offset;      // first parameter of the level: its first entry * F
    float scale;
    gj_u32 resolution;
    gj_u32 entries;     // table entries (each F values)
    gj_u32 mask;        // entries - 1 when entries is a power of two, else 0
    gj_u32 cell_fixed;  // fixed_point_pos: the cell size in fixed point; else 0
    gj_u32 mode;        // GJ_INDEX_*
    gj_u32 small;       // 1: level-major backward sums it in shared memory (NAME_backward_coarse)
    gj_u32 pad;         // never read, but keep it: without it the kernels copy a row out of
                        // constant memory with other loads (different PTX)
    gj_u64 mod_magic;   // (2^64 - 1) / entries + 1, wrapped to 64 bits: gj_fastmod's multiplier
};

// ---- PCG32 (O'Neill's PCG-XSH-RR 64/32) -----------------------------------
struct gj_pcg32 {
    gj_u64 state;
    gj_u64 inc;

    static constexpr gj_u64 MULT = 0x5851f42d4c957f2dULL;

    GJ_INLINE gj_pcg32(gj_u64 initstate, gj_u64 initseq) {
        state = 0u;
        inc = (initseq << 1u) | 1u;
        next_uint();
        state += initstate;
        next_uint();
    }

    GJ_INLINE gj_u32 next_uint() {
        const gj_u64 old = state;
        state = old * MULT + inc;
        const gj_u32 xorshifted = (gj_u32)(((old >> 18u) ^ old) >> 27u);
        const gj_u32 rot = (gj_u32)(old >> 59u);
        return (xorshifted >> rot) | (xorshifted << ((~rot + 1u) & 31u));
    }

    // A float in [0, 1) from the top 23 bits.
    GJ_INLINE float next_float() {
        const gj_u32 bits = (next_uint() >> 9) | 0x3f800000u;
        return __uint_as_float(bits) - 1.0f;
    }

    // Brown's "random number generation with arbitrary strides": O(log delta).
    GJ_INLINE void advance(gj_u64 delta) {
        gj_u64 cur_mult = MULT, cur_plus = inc, acc_mult = 1u, acc_plus = 0u;
        while (delta > 0) {
            if (delta & 1) {
                acc_mult *= cur_mult;
                acc_plus = acc_plus * cur_mult + cur_plus;
            }
            cur_plus = (cur_mult + 1) * cur_plus;
            cur_mult *= cur_mult;
            delta >>= 1;
        }
        state = acc_mult * state + acc_plus;
    }
};

// ---- hashes -----------------------------------------------------------------
GJ_INLINE constexpr gj_u32 gj_prime(int i) {
    return i == 0 ? 1958374283u
         : i == 1 ? 2654435761u
         : i == 2 ? 805459861u
         : i == 3 ? 3674653429u
         : i == 4 ? 2097192037u
         : i == 5 ? 1434869437u
                  : 2165219737u;
}

template <int D, int HASH>
GJ_INLINE gj_u32 gj_hash(const gj_u32 (&v)[D]) {
    if constexpr (HASH == GJ_HASH_BASE_CONVERT) {
        gj_u32 k = 0;
#pragma unroll
        for (int d = 0; d < D; ++d) {
            k = (k + v[d]) * 2531011u;
        }
        return k;
    } else if constexpr (HASH == GJ_HASH_RNG) {
        static_assert(D <= 7, "the Rng hash takes at most 7 dimensions");
        constexpr gj_u32 bits_per_dim = 64 / D;
        gj_u64 step = 0;
#pragma unroll
        for (int d = 0; d < D; ++d) {
            step ^= (gj_u64)v[d] << (d * bits_per_dim);
        }
        gj_pcg32 rng(1337u, 1u);
        rng.advance(step);
        return rng.next_uint();
    } else {
        static_assert(D <= 7, "the prime hashes take at most 7 dimensions");
        gj_u32 k = 0;
#pragma unroll
        for (int d = 0; d < D; ++d) {
            const gj_u32 p = HASH == GJ_HASH_PRIME           ? gj_prime(d)
                           : HASH == GJ_HASH_REVERSED_PRIME  ? gj_prime(6 - d)
                           : (d == 0 ? 1u : gj_prime(d)); // CoherentPrime: x stays coherent
            k ^= v[d] * p;
        }
        return k;
    }
}

// a % lv.entries without a division: the direct remainder of Lemire, Kaser and Kurz
// (exact for every 32-bit a and table size), two multiplications and no branch. A
// division, or a call to an out-of-line one, at every corner would either swell the
// kernels or stop the corners' loads from overlapping.
GJ_INLINE gj_u32 gj_fastmod(gj_u32 a, const gj_level& lv) {
    const gj_u64 low = lv.mod_magic * (gj_u64)a;
    return (gj_u32)__umul64hi(low, (gj_u64)lv.entries);
}

// a % lv.entries: where the level's constants are literals (the device functions) the
// compiler folds the modulo itself; from the level table, gj_fastmod.
template <bool LITERAL> GJ_INLINE gj_u32 gj_mod_by(gj_u32 a, const gj_level& lv) {
    if constexpr (LITERAL) return a % lv.entries;
    else return gj_fastmod(a, lv);
}

// Table entry of corner v at level lv.
template <int D, int HASH, int MODE>
GJ_INLINE gj_u32 gj_corner_index(const gj_u32 (&v)[D], const gj_level& lv) {
    constexpr int KIND = MODE & 3;
    constexpr bool LITERAL = (MODE & GJ_INDEX_LITERAL) != 0;
    const gj_u32 entries = lv.entries, resolution = lv.resolution;
    if constexpr ((MODE & GJ_INDEX_POW2) != 0) {
        // The hash, or the dense index in wrapping 32-bit arithmetic (exact modulo 2^32,
        // so exact modulo the table size too), masked.
        if constexpr (KIND == GJ_INDEX_HASH) {
            return gj_hash<D, HASH>(v) & lv.mask;
        } else {
            gj_u32 index = 0, stride = 1;
#pragma unroll
            for (int d = 0; d < D; ++d) {
                index += v[d] * stride;
                stride *= resolution;
            }
            return index & lv.mask;
        }
    } else if constexpr (KIND == GJ_INDEX_HASH) {
        // A hashed table whose size is not a power of two (where D > 10 lets a small
        // dense table hash).
        return gj_mod_by<LITERAL>(gj_hash<D, HASH>(v), lv);
    } else if constexpr (KIND == GJ_INDEX_DENSE) {
        // Wrapping uint32 arithmetic, exactly as the reference (inputs outside [0,1]); the
        // index is inside the table unless the input is, so the division is rarely paid.
        gj_u32 index = 0, stride = 1;
#pragma unroll
        for (int d = 0; d < D; ++d) {
            index += v[d] * stride;
            stride *= resolution;
        }
        return index < entries ? index : gj_mod_by<LITERAL>(index, lv);
    } else {
        // Horner's scheme modulo the table size: exact for any resolution and D.
        const gj_u64 r = resolution % entries;
        gj_u64 index = 0;
#pragma unroll
        for (int d = D - 1; d >= 0; --d) {
            index = (index * r + v[d] % entries) % entries;
        }
        return (gj_u32)index;
    }
}

#endif // GJ_HASH_CUH
