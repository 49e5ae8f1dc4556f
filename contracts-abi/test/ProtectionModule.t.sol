// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {ProtectionModule, IAavePool, IERC20Like, ISwapRouter02} from "../src/ProtectionModule.sol";

/// The few Forge cheatcodes these tests use (the npm forge-std is an incomplete copy)
interface Vm {
    function prank(address sender) external;
    function deal(address who, uint256 amount) external;
    function store(address target, bytes32 slot, bytes32 value) external;
    function expectRevert(bytes calldata revertData) external;
    function expectRevert() external;
    function expectRevert(bytes4 selector) external;
    function envAddress(string calldata name) external view returns (address);
    function assume(bool condition) external pure;
}

interface ISafeSetup {
    function setup(
        address[] calldata owners,
        uint256 threshold,
        address to,
        bytes calldata data,
        address fallbackHandler,
        address paymentToken,
        uint256 payment,
        address payable paymentReceiver
    ) external;
    function enableModule(address module) external;
    function disableModule(address prevModule, address module) external;
}

interface ISafeProxyFactory {
    function createProxyWithNonce(address singleton, bytes memory initializer, uint256 saltNonce) external returns (address);
}

interface IPoolFull is IAavePool {
    function supply(address asset, uint256 amount, address onBehalfOf, uint16 referralCode) external;
    function borrow(address asset, uint256 amount, uint256 interestRateMode, uint16 referralCode, address onBehalfOf) external;
    function withdraw(address asset, uint256 amount, address to) external returns (uint256);
    function FLASHLOAN_PREMIUM_TOTAL() external view returns (uint128);
}

interface IWeth {
    function deposit() external payable;
}

interface IMintable {
    function minter() external view returns (address);
    function mint(address to, uint256 value) external;
}

interface IUniswapPool {
    function slot0() external view returns (uint160 sqrtPriceX96, int24, uint16, uint16, uint16, uint8, bool);
}

interface IOracle {
    function getAssetPrice(address asset) external view returns (uint256);
}

/// A listed token that calls back into its hook on approve (the reentrancy attempt)
contract ReentrantToken {
    address public hook;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => uint256) public balanceOf;

    function setHook(address h) external {
        hook = h;
    }

    function decimals() external pure returns (uint8) {
        return 18;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        if (hook != address(0)) MaliciousAutomation(hook).reenter();
        return true;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        return true;
    }
}

/// An automation key that is a contract and re-enters the module from a token's callback
contract MaliciousAutomation {
    ProtectionModule public module;
    address public weth;

    function arm(ProtectionModule m, address w) external {
        module = m;
        weth = w;
    }

    function go(address token, address pool) external {
        module.execute(token, abi.encodeCall(IERC20Like.approve, (pool, 1)));
    }

    function reenter() external {
        module.deleverage(weth, 1 ether, 0);
    }
}

contract ProtectionModuleTest {
    bool public constant IS_TEST = true;
    Vm private constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    address private constant POOL = 0xA238Dd80C259a72e81d7e4664a9801593F98d1c5;
    address private constant ORACLE = 0x2Cc0Fc26eD4563A5ce5e8bdcfe1A2878676Ae156;
    address private constant USDC = 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913;
    address private constant WETH = 0x4200000000000000000000000000000000000006;
    address private constant CBBTC = 0xcbB7C0000aB88B473b1f5aFd9ef808440eed33Bf;
    address private constant ROUTER = 0x2626664c2603336E57B271c5C0b26F421741e481;
    address private constant SAFE_L2 = 0x29fcB43b46531BcA003ddC8FCB67FFE91900C762;
    address private constant SAFE_FACTORY = 0x4e1DCf7AD4e460CfD30791CCC4F9c8a4f820ec67;
    address private constant FALLBACK = 0xfd0732Dc9E303f09fCEf3a7388Ad10A83459Ec99;
    uint256 private constant PARK_BPS = 2500;
    uint256 private constant SLIPPAGE_BPS = 100;

    address private automation = address(0xA11CE);
    address private attacker = address(0xBAD);
    address private wethFeed;
    address private wethUsdcPool;
    address private safe;
    ProtectionModule private module;
    uint256 private saltNonce;

    function setUp() public {
        wethFeed = vm.envAddress("FORK_WETH_FEED");
        wethUsdcPool = vm.envAddress("FORK_WETH_USDC_POOL");
        safe = _newSafe();
        module = _deploy(safe, automation, _tokens(WETH));
        vm.prank(safe);
        ISafeSetup(safe).enableModule(address(module));
        // 10 WETH supplied ($30,000), 15,000 USDC borrowed and spent: LTV 50%
        vm.deal(address(this), 5_000 ether);
        IWeth(WETH).deposit{value: 10 ether}();
        IERC20Like(WETH).approve(POOL, 10 ether);
        IPoolFull(POOL).supply(WETH, 10 ether, safe, 0);
        vm.prank(safe);
        IPoolFull(POOL).borrow(USDC, 15_000e6, 2, 0, safe);
        vm.prank(safe);
        IERC20Like(USDC).transfer(address(0xdead), 15_000e6);
    }

    // ---------------------------------------------------------------- the deleverage itself

    /// at a health factor of 1.02 the collateral cannot be withdrawn first; flash liquidity repays first
    function test_deleverageFromHealth102WithFlashLiquidity() public {
        _crashTo(1_855); // HF = 10 x 1,855 x 0.83 / 15,000 = 1.0264
        (,,,,, uint256 hf) = IAavePool(POOL).getUserAccountData(safe);
        _require(hf > 1.01e18 && hf < 1.03e18, "health factor near 1.02");
        // without flash liquidity the withdrawal breaks Aave's own health check (its custom error, selector 0x6679996d)
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSignature("HealthFactorLowerThanLiquidationThreshold()"));
        module.deleverage(WETH, 3 ether, 0);

        Reading memory before = _read();
        uint256 premium = (5_400e6 * IPoolFull(POOL).FLASHLOAN_PREMIUM_TOTAL()) / 10_000;
        _require(premium > 0, "the fork charges a flash premium");
        vm.prank(automation);
        module.deleverage(WETH, 3 ether, 5_400e6);
        Reading memory afterwards = _read();
        _checkSafer(before, afterwards, 3 ether, premium);
        _require(afterwards.hf > 1.1e18, "health factor well above 1 after one act");
    }

    /// attack (a stolen automation key): sell a sliver of WETH with a large flash loan, so the Safe pays the premium on
    /// money nothing needed; the loan and its premium are bounded by the sale's minimum out
    function test_escape_flashPremiumOnALoanTheSaleDoesNotCover() public {
        _crashTo(2_000);
        IERC20Like(USDC).transfer(safe, 8_000e6); // idle USDC the Safe holds: what would pay the loan back
        uint256 minOut = (0.001 ether * 2_000 / 1e12) * (10_000 - SLIPPAGE_BPS) / 10_000;
        uint256 premium = (7_400e6 * IPoolFull(POOL).FLASHLOAN_PREMIUM_TOTAL()) / 10_000;
        Reading memory before = _read();
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.FlashAboveSale.selector, 7_400e6 + premium, minOut));
        module.deleverage(WETH, 0.001 ether, 7_400e6);
        Reading memory unchanged = _read();
        _require(unchanged.debt == before.debt && unchanged.usdc == before.usdc, "no premium paid");
    }

    /// far from the threshold the collateral is withdrawn first, no flash loan, no premium
    function test_deleverageWithoutFlash() public {
        _crashTo(2_400); // LTV 62.5%
        Reading memory before = _read();
        vm.prank(automation);
        module.deleverage(WETH, 2 ether, 0);
        _checkSafer(before, _read(), 2 ether, 0);
    }

    /// fuzzed: inside the feasible region every deleverage succeeds and keeps every bound
    function testFuzz_deleverageKeepsItsBounds(uint256 priceSeed, uint256 sellSeed, uint256 flashSeed) public {
        uint256 price = _bound(priceSeed, 1_850, 2_800);
        _crashTo(price);
        uint256 sell = _bound(sellSeed, 0.05 ether, 2.5 ether);
        uint256 value = (sell * price) / 1e12; // USDC units at the oracle
        // flash at most 95% of what the sale returns at the bound, so the proceeds repay it with its premium
        uint256 flash = _bound(flashSeed, 0, (value * 95) / 100);
        // the withdrawal must leave Aave's health factor at 1 or more: repay at least what that needs first
        (uint256 c, uint256 d,,,,) = IAavePool(POOL).getUserAccountData(safe);
        uint256 room = ((c / 100 - value) * 8_250 * 100) / (10_000 * 101); // collateral left x threshold / 1.01, USDC units
        uint256 need = d / 100 > room ? d / 100 - room : 0;
        if (flash < need) flash = need * 102 / 100 < (value * 95) / 100 ? need * 102 / 100 : (value * 95) / 100;
        Reading memory before = _read();
        vm.prank(automation);
        module.deleverage(WETH, sell, flash);
        uint256 premium = (flash * IPoolFull(POOL).FLASHLOAN_PREMIUM_TOTAL()) / 10_000;
        _checkSafer(before, _read(), sell, premium);
    }

    /// fuzzed: any amounts at all either revert (nothing changes) or keep every bound
    function testFuzz_anyAmountsRevertOrKeepBounds(uint256 sellSeed, uint256 flashSeed) public {
        _crashTo(2_000);
        uint256 sell = _bound(sellSeed, 1, 20 ether);
        uint256 flash = _bound(flashSeed, 0, 40_000e6);
        Reading memory before = _read();
        vm.prank(automation);
        try module.deleverage(WETH, sell, flash) {
            uint256 premium = (flash * IPoolFull(POOL).FLASHLOAN_PREMIUM_TOTAL()) / 10_000;
            _checkSafer(before, _read(), sell, premium);
        } catch {
            Reading memory unchanged = _read();
            _require(unchanged.debt == before.debt && unchanged.collateral == before.collateral, "a refusal changes nothing");
            _require(unchanged.usdc == before.usdc && unchanged.weth == before.weth, "a refusal moves no token");
        }
    }

    /// fuzzed: a pool pushed under the oracle's price beyond the bound makes the swap revert; within it, it fills
    function testFuzz_worsePriceThanOracleReverts(uint256 gapSeed) public {
        _crashTo(2_400);
        uint256 gapBps = _bound(gapSeed, 0, 600);
        _arbitrage((2_400 * (10_000 - gapBps)) / 10_000);
        Reading memory before = _read();
        vm.prank(automation);
        try module.deleverage(WETH, 1 ether, 0) {
            _require(gapBps < SLIPPAGE_BPS, "a swap under the oracle's bound never fills");
            _checkSafer(before, _read(), 1 ether, 0);
        } catch {
            // the 0.05% pool fee and the price impact of 1 WETH sit between the pool and the bound
            _require(gapBps > SLIPPAGE_BPS - 40, "a swap within the bound fills");
        }
    }

    function test_deleverageOvershootingTheParkTargetReverts() public {
        _crashTo(2_400); // LTV 62.5%: selling 9 WETH would take it far under 25%
        vm.prank(automation);
        vm.expectRevert();
        module.deleverage(WETH, 6 ether, 0);
    }

    function test_deleverageOfAHealthyPositionAtTheParkTargetReverts() public {
        _sell(3 ether); // LTV 50% -> about 29%, near the 25% park target
        (uint256 c, uint256 d,,,,) = IAavePool(POOL).getUserAccountData(safe);
        _require((d * 10_000) / c < 3_000, "near the park target");
        vm.prank(automation);
        vm.expectRevert();
        module.deleverage(WETH, 1 ether, 0);
    }

    // ---------------------------------------------------------------- a malicious automation key

    function test_escape_swapToAnotherRecipient() public {
        bytes memory swap = abi.encodeCall(
            ISwapRouter02.exactInputSingle,
            (ISwapRouter02.ExactInputSingleParams(WETH, USDC, 500, attacker, 1 ether, 0, 0))
        );
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.CallNotAllowed.selector, ROUTER, ISwapRouter02.exactInputSingle.selector));
        module.execute(ROUTER, swap);
    }

    function test_escape_approvalToAnotherSpender() public {
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.CallNotAllowed.selector, WETH, IERC20Like.approve.selector));
        module.execute(WETH, abi.encodeCall(IERC20Like.approve, (attacker, type(uint256).max)));
        // nor the router, which would let a later swap pay anyone
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.CallNotAllowed.selector, WETH, IERC20Like.approve.selector));
        module.execute(WETH, abi.encodeCall(IERC20Like.approve, (ROUTER, type(uint256).max)));
    }

    function test_escape_transferOut() public {
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.CallNotAllowed.selector, USDC, IERC20Like.transfer.selector));
        module.execute(USDC, abi.encodeCall(IERC20Like.transfer, (attacker, 1)));
    }

    function test_escape_repaySomeoneElsesDebt() public {
        vm.prank(automation);
        vm.expectRevert(ProtectionModule.NotForThisSafe.selector);
        module.execute(POOL, abi.encodeWithSignature("repay(address,uint256,uint256,address)", USDC, 1e6, 2, attacker));
    }

    function test_escape_withdrawToAnotherAddress() public {
        vm.prank(automation);
        vm.expectRevert(ProtectionModule.NotForThisSafe.selector);
        module.execute(POOL, abi.encodeCall(IPoolFull.withdraw, (WETH, 1 ether, attacker)));
    }

    function test_escape_borrow() public {
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.CallNotAllowed.selector, POOL, IPoolFull.borrow.selector));
        module.execute(POOL, abi.encodeCall(IPoolFull.borrow, (USDC, 1e6, 2, 0, safe)));
    }

    function test_escape_sellUsdcOrAnUnlistedToken() public {
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.NotCollateral.selector, USDC));
        module.deleverage(USDC, 1e6, 0);
        vm.prank(automation);
        vm.expectRevert(abi.encodeWithSelector(ProtectionModule.NotCollateral.selector, CBBTC));
        module.deleverage(CBBTC, 1e8, 0);
    }

    function test_escape_callerIsNotTheAutomation(address caller) public {
        vm.assume(caller != automation);
        vm.prank(caller);
        vm.expectRevert(ProtectionModule.NotAutomation.selector);
        module.deleverage(WETH, 1 ether, 0);
    }

    function test_escape_flashCallbackFromOutside() public {
        _crashTo(2_400);
        // called directly
        vm.prank(attacker);
        vm.expectRevert(ProtectionModule.NotPool.selector);
        module.executeOperation(USDC, 1e6, 0, address(module), abi.encode(WETH, 1 ether));
        // through someone else's flash loan naming the module as its receiver
        vm.prank(attacker);
        vm.expectRevert(ProtectionModule.NotOwnFlashLoan.selector);
        IAavePool(POOL).flashLoanSimple(address(module), USDC, 1_000e6, abi.encode(WETH, 1 ether), 0);
    }

    function test_escape_disabledModuleDoesNothing() public {
        vm.prank(safe);
        ISafeSetup(safe).disableModule(address(1), address(module));
        vm.prank(automation);
        vm.expectRevert(ProtectionModule.NotEnabled.selector);
        module.deleverage(WETH, 1 ether, 0);
    }

    function test_escape_reentrantToken() public {
        ReentrantToken token = new ReentrantToken();
        MaliciousAutomation bad = new MaliciousAutomation();
        address[] memory tokens = new address[](3);
        (tokens[0], tokens[1], tokens[2]) = (USDC, WETH, address(token));
        ProtectionModule m = _deploy(safe, address(bad), tokens);
        vm.prank(safe);
        ISafeSetup(safe).enableModule(address(m));
        bad.arm(m, WETH);
        token.setHook(address(bad));
        vm.expectRevert(ProtectionModule.Reentrancy.selector);
        bad.go(address(token), POOL);
    }

    // ---------------------------------------------------------------- helpers

    struct Reading {
        uint256 collateral;
        uint256 debt;
        uint256 hf;
        uint256 usdc;
        uint256 weth;
    }

    function _read() private view returns (Reading memory r) {
        (r.collateral, r.debt,,,, r.hf) = IAavePool(POOL).getUserAccountData(safe);
        r.usdc = IERC20Like(USDC).balanceOf(safe);
        r.weth = IERC20Like(WETH).balanceOf(safe);
    }

    /// every bound of the module, checked from outside with the test's own arithmetic
    function _checkSafer(Reading memory b, Reading memory a, uint256 sold, uint256 premium) private view {
        uint256 ltvBefore = (b.debt * 10_000) / b.collateral;
        uint256 ltvAfter = (a.debt * 10_000) / a.collateral;
        _require(ltvAfter < ltvBefore, "LTV went down");
        _require(ltvAfter >= PARK_BPS, "LTV not under the park target");
        _require(a.hf > b.hf, "health factor went up");
        uint256 wethPrice = IOracle(ORACLE).getAssetPrice(WETH);
        uint256 usdcPrice = IOracle(ORACLE).getAssetPrice(USDC);
        uint256 equityBefore = b.collateral + (b.usdc * usdcPrice) / 1e6 + (b.weth * wethPrice) / 1e18 - b.debt;
        uint256 equityAfter = a.collateral + (a.usdc * usdcPrice) / 1e6 + (a.weth * wethPrice) / 1e18 - a.debt;
        uint256 bound = (sold * wethPrice / 1e18) * SLIPPAGE_BPS / 10_000 + (premium * usdcPrice) / 1e6 + 200;
        _require(equityAfter + bound >= equityBefore, "equity fell by no more than the slippage bound and the premium");
        _require(a.weth == b.weth, "no collateral left idle");
        _require(IERC20Like(WETH).allowance(safe, ROUTER) == 0, "no allowance left to the router");
        _require(IERC20Like(USDC).allowance(safe, POOL) == 0, "no allowance left to the Pool");
        _require(IERC20Like(USDC).balanceOf(address(module)) == 0, "nothing stays with the module");
        _require(IERC20Like(USDC).balanceOf(attacker) == 0 && IERC20Like(WETH).balanceOf(attacker) == 0, "nothing reached anyone else");
    }

    /// the oracle's ETH price, and the Uniswap pool traded to it (an arbitrageur)
    function _crashTo(uint256 usd) private {
        vm.store(wethFeed, bytes32(0), bytes32(usd * 1e8));
        _arbitrage(usd);
    }

    /// trade the WETH/USDC pool to `usd` per WETH: sell WETH down to it (or USDC up to it), the price limit stops the swap
    function _arbitrage(uint256 usd) private {
        uint160 target = uint160(_sqrt((usd * (1 << 192)) / 1e12));
        (uint160 now_,,,,,,) = IUniswapPool(wethUsdcPool).slot0();
        if (target == now_) return;
        if (target < now_) {
            IWeth(WETH).deposit{value: 500 ether}();
            IERC20Like(WETH).approve(ROUTER, 500 ether);
            ISwapRouter02(ROUTER).exactInputSingle(ISwapRouter02.ExactInputSingleParams(WETH, USDC, 500, address(this), 500 ether, 0, target));
        } else {
            address minter = IMintable(USDC).minter();
            vm.prank(minter);
            IMintable(USDC).mint(address(this), 5_000_000e6);
            IERC20Like(USDC).approve(ROUTER, 5_000_000e6);
            ISwapRouter02(ROUTER).exactInputSingle(ISwapRouter02.ExactInputSingleParams(USDC, WETH, 500, address(this), 5_000_000e6, 0, target));
        }
        IERC20Like(WETH).approve(ROUTER, 0);
        IERC20Like(USDC).approve(ROUTER, 0);
    }

    /// the owner sells collateral by hand (for a position already near the park target)
    function _sell(uint256 amount) private {
        vm.prank(automation);
        module.deleverage(WETH, amount, 0);
    }

    function _newSafe() private returns (address) {
        address[] memory owners = new address[](1);
        owners[0] = address(0xB0B);
        bytes memory init = abi.encodeCall(ISafeSetup.setup, (owners, 1, address(0), "", FALLBACK, address(0), 0, payable(address(0))));
        return ISafeProxyFactory(SAFE_FACTORY).createProxyWithNonce(SAFE_L2, init, ++saltNonce);
    }

    function _deploy(address safe_, address automation_, address[] memory tokens) private returns (ProtectionModule) {
        return new ProtectionModule(
            ProtectionModule.Config({
                safe: safe_,
                pool: POOL,
                automation: automation_,
                parkTargetBps: PARK_BPS,
                oracle: ORACLE,
                router: ROUTER,
                poolFee: 500,
                usdc: USDC,
                maxSlippageBps: SLIPPAGE_BPS
            }),
            tokens
        );
    }

    function _tokens(address collateral) private pure returns (address[] memory t) {
        t = new address[](2);
        (t[0], t[1]) = (USDC, collateral);
    }

    function _bound(uint256 x, uint256 lo, uint256 hi) private pure returns (uint256) {
        return lo + (x % (hi - lo + 1));
    }

    function _sqrt(uint256 x) private pure returns (uint256 y) {
        if (x == 0) return 0;
        y = x;
        uint256 z = (x + 1) / 2;
        while (z < y) {
            y = z;
            z = (x / z + z) / 2;
        }
    }

    function _require(bool ok, string memory what) private pure {
        require(ok, what);
    }

    receive() external payable {}
}
