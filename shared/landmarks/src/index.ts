/**
 * @polyphony/landmarks: landmark audio fingerprints for search by recording (Wang 2003). It knows PCM, hashes,
 * rows and offsets, nothing about songs or servers: the caller maps its songs to dense rows and passes an
 * availability filter. See README.md for the method, the parameters and the measured figures.
 */
export * from './params';
export * from './extract';
export * from './codec';
export * from './landmark-index';
export * from './matcher';
export * from './verify';
