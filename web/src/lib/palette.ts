// Series colours: distinguishable, readable on white and on the dark theme's surfaces.
export const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d', '#4d7c0f'];
