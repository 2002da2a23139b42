;; WebAssembly SIMD kernels of the IVF index (issue 19: build time and scan speed at 1M x 200-d).
;; Source of `kernels-wasm.ts` (base64 of the binary): rebuild with `node shared/vector-engine/scripts/build-wasm.mjs`
;; (needs wabt's wat2wasm, Debian package `wabt`); the generated file is committed, so building the
;; project needs no WebAssembly toolchain. Fixed-width SIMD (128-bit) is enabled by default in Node >= 16.
;;
;; All pointers are byte offsets into the imported memory. Float kernels need `dim % 4 == 0`, the int8
;; kernel `dim % 8 == 0` (the TypeScript wrappers check and fall back to plain JavaScript otherwise).
;; Float sums use float32 arithmetic in 4 lanes: lane l accumulates the products of dimensions d = l mod 4
;; in increasing d, and the lanes are added as (l0 + l1) + (l2 + l3). `kernels.ts` documents a plain
;; reference with the same rounding (`referenceDot`), and the unit tests compare them bit for bit.
;; The exception is `dotsF64` (float64 sums, bit-identical to the JavaScript `dot`; any dim), used where the query
;; path must give the same scores as the JavaScript code it replaced.
(module
  (import "env" "memory" (memory 1))

  ;; Horizontal sum (l0 + l1) + (l2 + l3) of a f32x4.
  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; out[j] = dot(x, c_j) (f32) for j in [0, k); x: dim floats, c: k rows of dim floats.
  ;; Tiling: one x chunk against 4 centroids (5 loads, 4 multiply-adds of 4 lanes).
  (func (export "dots") (param $x i32) (param $c i32) (param $k i32) (param $dim i32) (param $out i32)
    (local $stride i32) (local $j i32) (local $d i32) (local $c0 i32) (local $xv v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $stride (i32.shl (local.get $dim) (i32.const 2)))
    (block $done4
      (loop $rows4
        (br_if $done4 (i32.gt_s (i32.add (local.get $j) (i32.const 4)) (local.get $k)))
        (local.set $c0 (i32.add (local.get $c) (i32.mul (local.get $j) (local.get $stride))))
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $a1 (v128.const i64x2 0 0))
        (local.set $a2 (v128.const i64x2 0 0))
        (local.set $a3 (v128.const i64x2 0 0))
        (local.set $d (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_u (local.get $d) (local.get $stride)))
            (local.set $xv (v128.load (i32.add (local.get $x) (local.get $d))))
            (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $xv) (v128.load (i32.add (local.get $c0) (local.get $d))))))
            (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $xv)
              (v128.load (i32.add (i32.add (local.get $c0) (local.get $stride)) (local.get $d))))))
            (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $xv)
              (v128.load (i32.add (i32.add (local.get $c0) (i32.shl (local.get $stride) (i32.const 1))) (local.get $d))))))
            (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $xv)
              (v128.load (i32.add (i32.add (local.get $c0) (i32.mul (local.get $stride) (i32.const 3))) (local.get $d))))))
            (local.set $d (i32.add (local.get $d) (i32.const 16)))
            (br $l)))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 2))) (call $hsum (local.get $a0)))
        (f32.store (i32.add (local.get $out) (i32.shl (i32.add (local.get $j) (i32.const 1)) (i32.const 2))) (call $hsum (local.get $a1)))
        (f32.store (i32.add (local.get $out) (i32.shl (i32.add (local.get $j) (i32.const 2)) (i32.const 2))) (call $hsum (local.get $a2)))
        (f32.store (i32.add (local.get $out) (i32.shl (i32.add (local.get $j) (i32.const 3)) (i32.const 2))) (call $hsum (local.get $a3)))
        (local.set $j (i32.add (local.get $j) (i32.const 4)))
        (br $rows4)))
    (block $done1
      (loop $rows1
        (br_if $done1 (i32.ge_s (local.get $j) (local.get $k)))
        (local.set $c0 (i32.add (local.get $c) (i32.mul (local.get $j) (local.get $stride))))
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $d (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_u (local.get $d) (local.get $stride)))
            (local.set $a0 (f32x4.add (local.get $a0)
              (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $d))) (v128.load (i32.add (local.get $c0) (local.get $d))))))
            (local.set $d (i32.add (local.get $d) (i32.const 16)))
            (br $l)))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 2))) (call $hsum (local.get $a0)))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $rows1))))

  ;; Nearest centroid (largest dot product, ties to the lower index) of n points (rows of dim floats at x,
  ;; n a multiple of 4: pad by repeating a row) among k centroids at c. Writes the index (i32) and the dot
  ;; product (f32) of point i at outIdx + 4i and outScore + 4i. Tiling: 4 points against one centroid.
  (func (export "nearest4") (param $x i32) (param $n i32) (param $c i32) (param $k i32) (param $dim i32) (param $outIdx i32) (param $outScore i32)
    (local $stride i32) (local $i i32) (local $j i32) (local $d i32) (local $p0 i32) (local $cj i32) (local $cv v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $s f32) (local $b0 f32) (local $b1 f32) (local $b2 f32) (local $b3 f32)
    (local $i0 i32) (local $i1 i32) (local $i2 i32) (local $i3 i32)
    (local.set $stride (i32.shl (local.get $dim) (i32.const 2)))
    (block $pointsDone
      (loop $points
        (br_if $pointsDone (i32.ge_s (local.get $i) (local.get $n)))
        (local.set $p0 (i32.add (local.get $x) (i32.mul (local.get $i) (local.get $stride))))
        (local.set $b0 (f32.const -inf)) (local.set $b1 (f32.const -inf)) (local.set $b2 (f32.const -inf)) (local.set $b3 (f32.const -inf))
        (local.set $i0 (i32.const -1)) (local.set $i1 (i32.const -1)) (local.set $i2 (i32.const -1)) (local.set $i3 (i32.const -1))
        (local.set $j (i32.const 0))
        (block $centDone
          (loop $cents
            (br_if $centDone (i32.ge_s (local.get $j) (local.get $k)))
            (local.set $cj (i32.add (local.get $c) (i32.mul (local.get $j) (local.get $stride))))
            (local.set $a0 (v128.const i64x2 0 0))
            (local.set $a1 (v128.const i64x2 0 0))
            (local.set $a2 (v128.const i64x2 0 0))
            (local.set $a3 (v128.const i64x2 0 0))
            (local.set $d (i32.const 0))
            (block $e
              (loop $l
                (br_if $e (i32.ge_u (local.get $d) (local.get $stride)))
                (local.set $cv (v128.load (i32.add (local.get $cj) (local.get $d))))
                (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $cv) (v128.load (i32.add (local.get $p0) (local.get $d))))))
                (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $cv)
                  (v128.load (i32.add (i32.add (local.get $p0) (local.get $stride)) (local.get $d))))))
                (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $cv)
                  (v128.load (i32.add (i32.add (local.get $p0) (i32.shl (local.get $stride) (i32.const 1))) (local.get $d))))))
                (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $cv)
                  (v128.load (i32.add (i32.add (local.get $p0) (i32.mul (local.get $stride) (i32.const 3))) (local.get $d))))))
                (local.set $d (i32.add (local.get $d) (i32.const 16)))
                (br $l)))
            (local.set $s (call $hsum (local.get $a0)))
            (if (f32.gt (local.get $s) (local.get $b0)) (then (local.set $b0 (local.get $s)) (local.set $i0 (local.get $j))))
            (local.set $s (call $hsum (local.get $a1)))
            (if (f32.gt (local.get $s) (local.get $b1)) (then (local.set $b1 (local.get $s)) (local.set $i1 (local.get $j))))
            (local.set $s (call $hsum (local.get $a2)))
            (if (f32.gt (local.get $s) (local.get $b2)) (then (local.set $b2 (local.get $s)) (local.set $i2 (local.get $j))))
            (local.set $s (call $hsum (local.get $a3)))
            (if (f32.gt (local.get $s) (local.get $b3)) (then (local.set $b3 (local.get $s)) (local.set $i3 (local.get $j))))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $cents)))
        (i32.store (i32.add (local.get $outIdx) (i32.shl (local.get $i) (i32.const 2))) (local.get $i0))
        (i32.store (i32.add (local.get $outIdx) (i32.shl (i32.add (local.get $i) (i32.const 1)) (i32.const 2))) (local.get $i1))
        (i32.store (i32.add (local.get $outIdx) (i32.shl (i32.add (local.get $i) (i32.const 2)) (i32.const 2))) (local.get $i2))
        (i32.store (i32.add (local.get $outIdx) (i32.shl (i32.add (local.get $i) (i32.const 3)) (i32.const 2))) (local.get $i3))
        (f32.store (i32.add (local.get $outScore) (i32.shl (local.get $i) (i32.const 2))) (local.get $b0))
        (f32.store (i32.add (local.get $outScore) (i32.shl (i32.add (local.get $i) (i32.const 1)) (i32.const 2))) (local.get $b1))
        (f32.store (i32.add (local.get $outScore) (i32.shl (i32.add (local.get $i) (i32.const 2)) (i32.const 2))) (local.get $b2))
        (f32.store (i32.add (local.get $outScore) (i32.shl (i32.add (local.get $i) (i32.const 3)) (i32.const 2))) (local.get $b3))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $points))))

  ;; Integer ADC of the int8 mode: out[i] (i32) = sum_d codes[i*dim + d] (u8) * table[d] (i16), for i in
  ;; [0, count); dim a multiple of 8. Exact integer arithmetic (i32x4.dot_i16x8_s of zero-extended codes);
  ;; no overflow while dim * 255 * max|table| < 2^31 (the wrapper scales the table so).
  ;; Two codes per iteration share each table load.
  (func (export "dotU8I16") (param $codes i32) (param $count i32) (param $dim i32) (param $table i32) (param $out i32)
    (local $i i32) (local $d i32) (local $p i32) (local $tab2 i32) (local $tv v128) (local $a0 v128) (local $a1 v128)
    (block $pairsDone
      (loop $pairs
        (br_if $pairsDone (i32.gt_s (i32.add (local.get $i) (i32.const 2)) (local.get $count)))
        (local.set $p (i32.add (local.get $codes) (i32.mul (local.get $i) (local.get $dim))))
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $a1 (v128.const i64x2 0 0))
        (local.set $d (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_u (local.get $d) (local.get $dim)))
            (local.set $tv (v128.load (i32.add (local.get $table) (i32.shl (local.get $d) (i32.const 1)))))
            (local.set $a0 (i32x4.add (local.get $a0) (i32x4.dot_i16x8_s (v128.load8x8_u (i32.add (local.get $p) (local.get $d))) (local.get $tv))))
            (local.set $a1 (i32x4.add (local.get $a1)
              (i32x4.dot_i16x8_s (v128.load8x8_u (i32.add (i32.add (local.get $p) (local.get $dim)) (local.get $d))) (local.get $tv))))
            (local.set $d (i32.add (local.get $d) (i32.const 8)))
            (br $l)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $a0)) (i32x4.extract_lane 1 (local.get $a0)))
            (i32.add (i32x4.extract_lane 2 (local.get $a0)) (i32x4.extract_lane 3 (local.get $a0)))))
        (i32.store (i32.add (local.get $out) (i32.shl (i32.add (local.get $i) (i32.const 1)) (i32.const 2)))
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $a1)) (i32x4.extract_lane 1 (local.get $a1)))
            (i32.add (i32x4.extract_lane 2 (local.get $a1)) (i32x4.extract_lane 3 (local.get $a1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 2)))
        (br $pairs)))
    (if (i32.lt_s (local.get $i) (local.get $count))
      (then
        (local.set $p (i32.add (local.get $codes) (i32.mul (local.get $i) (local.get $dim))))
        (local.set $a0 (v128.const i64x2 0 0))
        (local.set $d (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_u (local.get $d) (local.get $dim)))
            (local.set $a0 (i32x4.add (local.get $a0)
              (i32x4.dot_i16x8_s (v128.load8x8_u (i32.add (local.get $p) (local.get $d)))
                (v128.load (i32.add (local.get $table) (i32.shl (local.get $d) (i32.const 1)))))))
            (local.set $d (i32.add (local.get $d) (i32.const 8)))
            (br $l)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (i32.add
            (i32.add (i32x4.extract_lane 0 (local.get $a0)) (i32x4.extract_lane 1 (local.get $a0)))
            (i32.add (i32x4.extract_lane 2 (local.get $a0)) (i32x4.extract_lane 3 (local.get $a0))))))))

  ;; PQ ADC: out[i] (f32) = sum_j table[j*256 + codes[i*m + j]] (f32, summed in increasing j), i in [0, count).
  ;; Scalar: 128-bit SIMD has no gather; this only saves JavaScript's bounds checks and float64 conversions.
  (func (export "pqScores") (param $codes i32) (param $count i32) (param $m i32) (param $table i32) (param $out i32)
    (local $i i32) (local $j i32) (local $p i32) (local $s f32) (local $t i32)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_s (local.get $i) (local.get $count)))
        (local.set $p (i32.add (local.get $codes) (i32.mul (local.get $i) (local.get $m))))
        (local.set $s (f32.const 0))
        (local.set $t (local.get $table))
        (local.set $j (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_s (local.get $j) (local.get $m)))
            (local.set $s (f32.add (local.get $s)
              (f32.load (i32.add (local.get $t) (i32.shl (i32.load8_u (i32.add (local.get $p) (local.get $j))) (i32.const 2))))))
            (local.set $t (i32.add (local.get $t) (i32.const 1024)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $l)))
        (f32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))) (local.get $s))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))

  ;; float64 dot products, bit-identical to `dot` of @polyphony/vectors (the query path's centroid scores, issue 19):
  ;; out[j] (f64, at out + 8j) = dot(x, c_j) for j in [0, k); x: dim floats, c: k rows of dim floats, any dim.
  ;; `dot` keeps 8 float64 accumulators s0..s7 (s_l takes the products of dimensions d = l mod 8 while d < dim - dim % 8,
  ;; the remaining dimensions go to s0 in increasing d) and returns ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
  ;; A product of two float32 values is exact in float64, so this needs no fused multiply-add: here s0..s7 are the
  ;; lanes of four f64x2 accumulators (two floats loaded and promoted per f64x2), same products, same sums, same order.
  ;; Tiling: one x chunk (promoted once) against 2 rows.
  (func $hsumF64 (param $v0 v128) (param $v1 v128) (param $v2 v128) (param $v3 v128) (result f64)
    (f64.add
      (f64.add
        (f64.add (f64x2.extract_lane 0 (local.get $v0)) (f64x2.extract_lane 1 (local.get $v0)))
        (f64.add (f64x2.extract_lane 0 (local.get $v1)) (f64x2.extract_lane 1 (local.get $v1))))
      (f64.add
        (f64.add (f64x2.extract_lane 0 (local.get $v2)) (f64x2.extract_lane 1 (local.get $v2)))
        (f64.add (f64x2.extract_lane 0 (local.get $v3)) (f64x2.extract_lane 1 (local.get $v3))))))

  ;; s0 of accumulator $v0 plus the tail dimensions [from, dim) of x . row, in increasing d (the tail loop of `dot`).
  (func $tailF64 (param $v0 v128) (param $x i32) (param $r i32) (param $from i32) (param $dim i32) (result v128)
    (local $s f64) (local $o i32)
    (local.set $s (f64x2.extract_lane 0 (local.get $v0)))
    (block $e
      (loop $l
        (br_if $e (i32.ge_s (local.get $from) (local.get $dim)))
        (local.set $o (i32.shl (local.get $from) (i32.const 2)))
        (local.set $s (f64.add (local.get $s)
          (f64.mul (f64.promote_f32 (f32.load (i32.add (local.get $r) (local.get $o))))
                   (f64.promote_f32 (f32.load (i32.add (local.get $x) (local.get $o)))))))
        (local.set $from (i32.add (local.get $from) (i32.const 1)))
        (br $l)))
    (f64x2.replace_lane 0 (local.get $v0) (local.get $s)))

  (func (export "dotsF64") (param $x i32) (param $c i32) (param $k i32) (param $dim i32) (param $out i32)
    (local $stride i32) (local $j i32) (local $o i32) (local $end i32) (local $ra i32) (local $rb i32)
    (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local.set $stride (i32.shl (local.get $dim) (i32.const 2)))
    ;; byte offset where the 8-wide loop stops: 4 * (dim - dim % 8)
    (local.set $end (i32.shl (i32.and (local.get $dim) (i32.const -8)) (i32.const 2)))
    (block $done2
      (loop $rows2
        (br_if $done2 (i32.gt_s (i32.add (local.get $j) (i32.const 2)) (local.get $k)))
        (local.set $ra (i32.add (local.get $c) (i32.mul (local.get $j) (local.get $stride))))
        (local.set $rb (i32.add (local.get $ra) (local.get $stride)))
        (local.set $a0 (v128.const i64x2 0 0)) (local.set $a1 (v128.const i64x2 0 0))
        (local.set $a2 (v128.const i64x2 0 0)) (local.set $a3 (v128.const i64x2 0 0))
        (local.set $b0 (v128.const i64x2 0 0)) (local.set $b1 (v128.const i64x2 0 0))
        (local.set $b2 (v128.const i64x2 0 0)) (local.set $b3 (v128.const i64x2 0 0))
        (local.set $o (i32.const 0))
        (block $e
          (loop $l
            (br_if $e (i32.ge_s (local.get $o) (local.get $end)))
            (local.set $x0 (f64x2.promote_low_f32x4 (v128.load64_zero offset=0 (i32.add (local.get $x) (local.get $o)))))
            (local.set $x1 (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $x) (local.get $o)))))
            (local.set $x2 (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (i32.add (local.get $x) (local.get $o)))))
            (local.set $x3 (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (i32.add (local.get $x) (local.get $o)))))
            (local.set $a0 (f64x2.add (local.get $a0) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=0 (i32.add (local.get $ra) (local.get $o)))) (local.get $x0))))
            (local.set $a1 (f64x2.add (local.get $a1) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $ra) (local.get $o)))) (local.get $x1))))
            (local.set $a2 (f64x2.add (local.get $a2) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (i32.add (local.get $ra) (local.get $o)))) (local.get $x2))))
            (local.set $a3 (f64x2.add (local.get $a3) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (i32.add (local.get $ra) (local.get $o)))) (local.get $x3))))
            (local.set $b0 (f64x2.add (local.get $b0) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=0 (i32.add (local.get $rb) (local.get $o)))) (local.get $x0))))
            (local.set $b1 (f64x2.add (local.get $b1) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $rb) (local.get $o)))) (local.get $x1))))
            (local.set $b2 (f64x2.add (local.get $b2) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (i32.add (local.get $rb) (local.get $o)))) (local.get $x2))))
            (local.set $b3 (f64x2.add (local.get $b3) (f64x2.mul (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (i32.add (local.get $rb) (local.get $o)))) (local.get $x3))))
            (local.set $o (i32.add (local.get $o) (i32.const 32)))
            (br $l)))
        (local.set $a0 (call $tailF64 (local.get $a0) (local.get $x) (local.get $ra) (i32.and (local.get $dim) (i32.const -8)) (local.get $dim)))
        (local.set $b0 (call $tailF64 (local.get $b0) (local.get $x) (local.get $rb) (i32.and (local.get $dim) (i32.const -8)) (local.get $dim)))
        (f64.store (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 3)))
          (call $hsumF64 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))
        (f64.store offset=8 (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 3)))
          (call $hsumF64 (local.get $b0) (local.get $b1) (local.get $b2) (local.get $b3)))
        (local.set $j (i32.add (local.get $j) (i32.const 2)))
        (br $rows2)))
    ;; last row when k is odd
    (if (i32.lt_s (local.get $j) (local.get $k))
      (then
        (local.set $ra (i32.add (local.get $c) (i32.mul (local.get $j) (local.get $stride))))
        (local.set $a0 (v128.const i64x2 0 0)) (local.set $a1 (v128.const i64x2 0 0))
        (local.set $a2 (v128.const i64x2 0 0)) (local.set $a3 (v128.const i64x2 0 0))
        (local.set $o (i32.const 0))
        (block $e1
          (loop $l1
            (br_if $e1 (i32.ge_s (local.get $o) (local.get $end)))
            (local.set $a0 (f64x2.add (local.get $a0) (f64x2.mul
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=0 (i32.add (local.get $ra) (local.get $o))))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=0 (i32.add (local.get $x) (local.get $o)))))))
            (local.set $a1 (f64x2.add (local.get $a1) (f64x2.mul
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $ra) (local.get $o))))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=8 (i32.add (local.get $x) (local.get $o)))))))
            (local.set $a2 (f64x2.add (local.get $a2) (f64x2.mul
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (i32.add (local.get $ra) (local.get $o))))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=16 (i32.add (local.get $x) (local.get $o)))))))
            (local.set $a3 (f64x2.add (local.get $a3) (f64x2.mul
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (i32.add (local.get $ra) (local.get $o))))
              (f64x2.promote_low_f32x4 (v128.load64_zero offset=24 (i32.add (local.get $x) (local.get $o)))))))
            (local.set $o (i32.add (local.get $o) (i32.const 32)))
            (br $l1)))
        (local.set $a0 (call $tailF64 (local.get $a0) (local.get $x) (local.get $ra) (i32.and (local.get $dim) (i32.const -8)) (local.get $dim)))
        (f64.store (i32.add (local.get $out) (i32.shl (local.get $j) (i32.const 3)))
          (call $hsumF64 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3))))))
)
