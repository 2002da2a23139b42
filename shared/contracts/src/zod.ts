import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Adds `.openapi()` to zod schemas once, for every contracts module.
extendZodWithOpenApi(z);

export { z };
