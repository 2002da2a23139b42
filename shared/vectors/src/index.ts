/**
 * @polyphony/vectors: the vector math every service shares (index, playlist, catalogue identity,
 * analysis). One cosine distance, one L2 normalisation, one k-means engine (euclidean and spherical, pluggable assignment kernel), one diagonal-GMM EM, one popcount and one Chromaprint comparison, one embedding codec, the
 * seeded generators and the real FFT of the audio front ends, so that "distance" means the same thing in every service.
 */
export * from './cosine';
export * from './kernels';
export * from './codec';
export * from './random';
export * from './lloyd';
export * from './kmeans';
export * from './gmm';
export * from './bits';
export * from './chromaprint';
export * from './fft';
