/**
 * The sandbox's gift-card catalog (spec 4.6; the entry shape is the sandbox's choice, see wire.ts).
 * Several products with several types each, so clients exercise real look-ups rather than a
 * single hard-coded id. `GOOGLE_PLAY` / `GOOGLE_PLAY_1000` is relied on by other test suites.
 */
import { type Catalog } from '../provider/wire';

export const sandboxCatalog: Catalog = {
  products: [
    {
      productId: 'GOOGLE_PLAY',
      name: 'Google Play',
      types: [
        { typeId: 'GOOGLE_PLAY_500', name: 'Google Play 500 DZD', value: 500, currency: 'DZD' },
        { typeId: 'GOOGLE_PLAY_1000', name: 'Google Play 1000 DZD', value: 1000, currency: 'DZD' },
        { typeId: 'GOOGLE_PLAY_2000', name: 'Google Play 2000 DZD', value: 2000, currency: 'DZD' },
      ],
    },
    {
      productId: 'PLAYSTATION',
      name: 'PlayStation Store',
      types: [
        { typeId: 'PSN_10_USD', name: 'PlayStation Store 10 USD', value: 10, currency: 'USD' },
        { typeId: 'PSN_20_USD', name: 'PlayStation Store 20 USD', value: 20, currency: 'USD' },
      ],
    },
    {
      productId: 'FREE_FIRE',
      name: 'Free Fire diamonds',
      types: [
        { typeId: 'FREE_FIRE_100', name: 'Free Fire 100 diamonds', value: 250, currency: 'DZD' },
        { typeId: 'FREE_FIRE_520', name: 'Free Fire 520 diamonds', value: 1200, currency: 'DZD' },
      ],
    },
    {
      productId: 'STEAM',
      name: 'Steam Wallet',
      types: [
        { typeId: 'STEAM_5_USD', name: 'Steam Wallet 5 USD', value: 5, currency: 'USD' },
        { typeId: 'STEAM_10_USD', name: 'Steam Wallet 10 USD', value: 10, currency: 'USD' },
      ],
    },
  ],
};

export function findProduct(productId: string) {
  return sandboxCatalog.products.find((product) => product.productId === productId);
}
