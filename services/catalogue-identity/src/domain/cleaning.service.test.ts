import { orphanDeletionAllowed } from './cleaning.service';

describe(orphanDeletionAllowed.name, () => {
  it('When orphans are exactly half the catalogue or more, then deletion is refused; fewer than half is allowed', () => {
    expect(orphanDeletionAllowed(5, 10)).toBe(false);
    expect(orphanDeletionAllowed(6, 10)).toBe(false);
    expect(orphanDeletionAllowed(4, 10)).toBe(true);
    expect(orphanDeletionAllowed(2, 5)).toBe(true);
    expect(orphanDeletionAllowed(3, 5)).toBe(false);
    expect(orphanDeletionAllowed(0, 0)).toBe(false);
  });
});
