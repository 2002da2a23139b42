import { int8Supported } from './analyser';

const cpuinfo = (flags: string) => `processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: test\nflags\t\t: ${flags}\nbugs\t\t: sysret_ss_attrs\n`;

describe('int8Supported (MusiCNN int8 only where ONNX Runtime cannot saturate)', () => {
  it('When an x86 CPU has AVX512-VNNI or AVX-VNNI, then int8 is allowed', () => {
    expect(int8Supported(cpuinfo('fpu sse2 avx2 fma avx512f avx512bw avx512_vnni avx512_bf16'), 'x64')).toBe(true);
    expect(int8Supported(cpuinfo('fpu sse2 avx2 fma avx_vnni'), 'x64')).toBe(true);
  });

  it('When an x86 CPU has only AVX2 or AVX-512 without VNNI, or its flags cannot be read, then it runs float', () => {
    expect(int8Supported(cpuinfo('fpu sse2 avx2 fma'), 'x64')).toBe(false);
    expect(int8Supported(cpuinfo('fpu sse2 avx2 fma avx512f avx512bw avx512vl'), 'x64')).toBe(false);
    // a flag that merely contains the word is not the flag
    expect(int8Supported(cpuinfo('fpu avx2 avx512_vnnix'), 'x64')).toBe(false);
    expect(int8Supported('', 'x64')).toBe(false);
  });

  it('When the CPU is not x86 (arm64), then float runs: int8 was measured on x86 with VNNI only', () => {
    expect(int8Supported('Features\t: fp asimd asimddp', 'arm64')).toBe(false);
    expect(int8Supported(cpuinfo('fpu avx512_vnni'), 'arm64')).toBe(false);
  });
});
