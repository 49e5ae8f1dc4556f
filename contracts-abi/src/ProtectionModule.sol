// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

interface ISafeModuleHost {
    function execTransactionFromModuleReturnData(address to, uint256 value, bytes calldata data, uint8 operation)
        external
        returns (bool success, bytes memory returnData);
    function isModuleEnabled(address module) external view returns (bool);
}

interface IAavePool {
    function getUserAccountData(address user)
        external
        view
        returns (
            uint256 totalCollateralBase,
            uint256 totalDebtBase,
            uint256 availableBorrowsBase,
            uint256 currentLiquidationThreshold,
            uint256 ltv,
            uint256 healthFactor
        );
    function repay(address asset, uint256 amount, uint256 interestRateMode, address onBehalfOf) external returns (uint256);
    function flashLoanSimple(address receiver, address asset, uint256 amount, bytes calldata params, uint16 referralCode)
        external;
}

interface IAaveOracle {
    function getAssetPrice(address asset) external view returns (uint256);
}

interface IERC20Like {
    function balanceOf(address who) external view returns (uint256);
    function allowance(address owner, address spender) external view returns (uint256);
    function approve(address spender, uint256 amount) external returns (bool);
    function transfer(address to, uint256 amount) external returns (bool);
    function decimals() external view returns (uint8);
}

/// SwapRouter02's exactInputSingle (no deadline field)
interface ISwapRouter02 {
    struct ExactInputSingleParams {
        address tokenIn;
        address tokenOut;
        uint24 fee;
        address recipient;
        uint256 amountIn;
        uint256 amountOutMinimum;
        uint160 sqrtPriceLimitX96;
    }

    function exactInputSingle(ExactInputSingleParams calldata params) external payable returns (uint256 amountOut);
}

/// @title ProtectionModule
/// @notice The on-wallet policy of a managed treasury: a Safe module that lets one service automation
///         key act on the Safe's own Aave V3 position, and only toward safety, at a bounded cost.
/// @dev Deny by default: while the operator has not enabled it on the Safe, the Safe itself refuses
///      every call (GS104). Once enabled, the automation key may only:
///        - execute(): Pool.repay(asset, amount, mode, onBehalfOf == Safe) and Pool.repayWithATokens:
///          LTV must go down and must not end below the park target; Pool.withdraw(asset, amount,
///          to == Safe): LTV must not go up; token.approve(Pool, amount) for the listed tokens;
///        - deleverage(): repay the Safe's USDC debt from its own collateral in one transaction. The
///          module itself builds every call (withdraw to the Safe, an exact approval of the router,
///          the router's exactInputSingle with the Safe as recipient and a minimum out derived from
///          Aave's oracle less maxSlippageBps, a repayment on the Safe's behalf), optionally inside an
///          Aave flashLoanSimple of USDC that repays first when the position is too close to its
///          liquidation threshold to withdraw first. After it: LTV lower and not below the park
///          target, health factor higher, the Safe's equity (collateral - debt + the idle balances of
///          the two tokens touched, at the oracle's prices) no lower than before less the slippage
///          bound and the flash premium on the amount moved (the loan and its premium at most the
///          sale's minimum out), and no allowance left to the router or the Pool.
///      Always value 0 and a plain call (never delegatecall). Revoking is the operator's disableModule;
///      a transaction already submitted may still settle.
contract ProtectionModule {
    bytes4 private constant REPAY = bytes4(keccak256("repay(address,uint256,uint256,address)"));
    bytes4 private constant REPAY_WITH_ATOKENS = bytes4(keccak256("repayWithATokens(address,uint256,uint256)"));
    bytes4 private constant WITHDRAW = bytes4(keccak256("withdraw(address,uint256,address)"));
    bytes4 private constant APPROVE = bytes4(keccak256("approve(address,uint256)"));
    uint8 private constant CALL = 0;
    uint256 private constant VARIABLE = 2;
    /// rounding of Aave's ray maths between two reads of one position, in base units (8 decimals USD)
    uint256 private constant EQUITY_DUST_BASE = 100;

    address public immutable safe;
    address public immutable pool;
    address public immutable automation;
    /// park target in basis points of LTV (2500 = 25%)
    uint256 public immutable parkTargetBps;
    /// the Aave oracle whose prices bound every swap
    address public immutable oracle;
    /// Uniswap SwapRouter02, the only swap venue, and the fee tier of its pools
    address public immutable router;
    uint24 public immutable poolFee;
    /// the debt asset the deleverage repays
    address public immutable usdc;
    /// the most a swap may return under the oracle's value, in basis points (fixed at deployment)
    uint256 public immutable maxSlippageBps;
    mapping(address => bool) public listedToken;

    /// 1 while a call runs (no reentry), 2 inside the module's own flash loan
    uint256 private _state;
    /// what the flash-loan callback reports back to deleverage
    uint256 private _premium;
    uint256 private _received;

    event ProtectionExecuted(address indexed to, bytes4 indexed selector, uint256 ltvBeforeBps, uint256 ltvAfterBps);
    event Deleveraged(
        address indexed collateral,
        uint256 collateralSold,
        uint256 usdcReceived,
        uint256 flashAmount,
        uint256 flashPremium,
        uint256 ltvBeforeBps,
        uint256 ltvAfterBps,
        uint256 healthBefore,
        uint256 healthAfter
    );

    error NotAutomation();
    error NotEnabled();
    error CallNotAllowed(address to, bytes4 selector);
    error NotForThisSafe();
    error TokenNotListed(address token);
    error LtvDidNotDecrease(uint256 beforeBps, uint256 afterBps);
    error LtvIncreased(uint256 beforeBps, uint256 afterBps);
    error OvershotParkTarget(uint256 afterBps, uint256 parkTargetBps);
    error ExecutionFailed();
    error Reentrancy();
    error NotCollateral(address asset);
    error ZeroAmount();
    error NotPool();
    error NotOwnFlashLoan();
    error SlippageAboveOracle(uint256 received, uint256 minimum);
    error HealthDidNotRise(uint256 beforeHf, uint256 afterHf);
    error EquityLoss(uint256 lossBase, uint256 boundBase);
    error FlashAboveSale(uint256 owed, uint256 minOut);
    error ApprovalLeftBehind(address token, address spender, uint256 amount);
    error BadConfiguration();

    struct Config {
        address safe;
        address pool;
        address automation;
        uint256 parkTargetBps;
        address oracle;
        address router;
        uint24 poolFee;
        address usdc;
        uint256 maxSlippageBps;
    }

    constructor(Config memory c, address[] memory tokens) {
        if (c.parkTargetBps == 0 || c.parkTargetBps >= 10_000 || c.maxSlippageBps >= 10_000) revert BadConfiguration();
        safe = c.safe;
        pool = c.pool;
        automation = c.automation;
        parkTargetBps = c.parkTargetBps;
        oracle = c.oracle;
        router = c.router;
        poolFee = c.poolFee;
        usdc = c.usdc;
        maxSlippageBps = c.maxSlippageBps;
        for (uint256 i = 0; i < tokens.length; i++) {
            listedToken[tokens[i]] = true;
        }
    }

    modifier onlyAutomation() {
        if (msg.sender != automation) revert NotAutomation();
        if (_state != 0) revert Reentrancy();
        if (!ISafeModuleHost(safe).isModuleEnabled(address(this))) revert NotEnabled();
        _state = 1;
        _;
        _state = 0;
    }

    /// @notice LTV of the Safe's Aave position in basis points (0 with no debt)
    function ltvBps() public view returns (uint256) {
        (uint256 collateral, uint256 debt,,,,) = IAavePool(pool).getUserAccountData(safe);
        return _ltv(collateral, debt);
    }

    function execute(address to, bytes calldata data) external onlyAutomation returns (bool) {
        if (data.length < 4) revert CallNotAllowed(to, bytes4(0));
        bytes4 selector = bytes4(data[:4]);
        uint8 kind; // 1 repay, 2 withdraw, 3 approve
        if (to == pool) {
            if (selector == REPAY) {
                (address asset,,, address onBehalfOf) = abi.decode(data[4:], (address, uint256, uint256, address));
                if (onBehalfOf != safe) revert NotForThisSafe();
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 1;
            } else if (selector == REPAY_WITH_ATOKENS) {
                (address asset,,) = abi.decode(data[4:], (address, uint256, uint256));
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 1;
            } else if (selector == WITHDRAW) {
                (address asset,, address recipient) = abi.decode(data[4:], (address, uint256, address));
                if (recipient != safe) revert NotForThisSafe();
                if (!listedToken[asset]) revert TokenNotListed(asset);
                kind = 2;
            } else {
                revert CallNotAllowed(to, selector);
            }
        } else if (listedToken[to] && selector == APPROVE) {
            (address spender,) = abi.decode(data[4:], (address, uint256));
            if (spender != pool) revert CallNotAllowed(to, selector);
            kind = 3;
        } else {
            revert CallNotAllowed(to, selector);
        }

        uint256 before = kind == 3 ? 0 : ltvBps();
        _call(to, data);
        if (kind == 3) return true;
        uint256 afterLtv = ltvBps();
        if (kind == 1) {
            if (afterLtv >= before) revert LtvDidNotDecrease(before, afterLtv);
            if (afterLtv < parkTargetBps) revert OvershotParkTarget(afterLtv, parkTargetBps);
        } else if (afterLtv > before) {
            revert LtvIncreased(before, afterLtv);
        }
        emit ProtectionExecuted(to, selector, before, afterLtv);
        return true;
    }

    /// @notice Repay the Safe's USDC debt from its own collateral, in one transaction.
    /// @param collateral the listed collateral to sell (never USDC)
    /// @param amount how much of it to withdraw and sell (token units)
    /// @param flashAmount USDC borrowed from Aave for the length of this transaction and repaid on the Safe's
    ///        behalf before the withdrawal (0: withdraw first); the swap's proceeds pay it back with its premium
    function deleverage(address collateral, uint256 amount, uint256 flashAmount) external onlyAutomation returns (bool) {
        if (collateral == usdc || !listedToken[collateral]) revert NotCollateral(collateral);
        if (amount == 0) revert ZeroAmount();
        Snapshot memory before = _snapshot(collateral);

        uint256 received;
        uint256 premium;
        if (flashAmount > 0) {
            _state = 2;
            IAavePool(pool).flashLoanSimple(address(this), usdc, flashAmount, abi.encode(collateral, amount), 0);
            _state = 1;
            (premium, received) = (_premium, _received);
            (_premium, _received) = (0, 0);
        } else {
            received = _sell(collateral, amount);
            _repay(received);
        }
        // whatever USDC the swap brought beyond the debt stays idle in the Safe (counted in its equity)

        Snapshot memory afterwards = _snapshot(collateral);
        if (afterwards.ltvBps >= before.ltvBps) revert LtvDidNotDecrease(before.ltvBps, afterwards.ltvBps);
        if (afterwards.ltvBps < parkTargetBps) revert OvershotParkTarget(afterwards.ltvBps, parkTargetBps);
        if (afterwards.health <= before.health) revert HealthDidNotRise(before.health, afterwards.health);
        if (afterwards.equity + EQUITY_DUST_BASE < before.equity) {
            uint256 bound = (_value(collateral, amount) * maxSlippageBps) / 10_000 + _value(usdc, premium);
            uint256 loss = before.equity - afterwards.equity;
            if (loss > bound + EQUITY_DUST_BASE) revert EquityLoss(loss, bound);
        }
        _noAllowance(collateral, safe, router);
        _noAllowance(usdc, safe, pool);
        _noAllowance(usdc, address(this), pool);
        emit Deleveraged(collateral, amount, received, flashAmount, premium, before.ltvBps, afterwards.ltvBps, before.health, afterwards.health);
        return true;
    }

    struct Snapshot {
        uint256 ltvBps;
        uint256 health;
        uint256 equity;
    }

    /// the Safe's LTV, health factor and equity: collateral - debt + its idle balances of the two tokens a
    /// deleverage touches, in base units at the oracle's prices
    function _snapshot(address collateral) private view returns (Snapshot memory s) {
        (uint256 collateralBase, uint256 debtBase,,,, uint256 health) = IAavePool(pool).getUserAccountData(safe);
        uint256 idle = _value(collateral, IERC20Like(collateral).balanceOf(safe)) + _value(usdc, IERC20Like(usdc).balanceOf(safe));
        s.ltvBps = _ltv(collateralBase, debtBase);
        s.health = health;
        s.equity = collateralBase + idle > debtBase ? collateralBase + idle - debtBase : 0;
    }

    /// @notice Aave's flash-loan callback: only for the module's own flashLoanSimple, during a deleverage
    function executeOperation(address asset, uint256 amount, uint256 premium, address initiator, bytes calldata params)
        external
        returns (bool)
    {
        if (msg.sender != pool) revert NotPool();
        if (initiator != address(this) || _state != 2 || asset != usdc) revert NotOwnFlashLoan();
        _state = 1;
        // the borrowed USDC repays the Safe's debt first, which frees collateral to withdraw
        if (!IERC20Like(usdc).approve(pool, amount)) revert ExecutionFailed();
        IAavePool(pool).repay(usdc, amount, VARIABLE, safe);
        uint256 left = IERC20Like(usdc).allowance(address(this), pool);
        if (left != 0) {
            // less debt than borrowed: the rest returns to the Pool with the loan
            IERC20Like(usdc).approve(pool, 0);
        }
        (address collateral, uint256 sold) = abi.decode(params, (address, uint256));
        uint256 owed = amount + premium;
        // the loan and its premium are at most the sale's guaranteed proceeds: the premium is paid on what was sold
        if (owed > _minOut(collateral, sold)) revert FlashAboveSale(owed, _minOut(collateral, sold));
        uint256 received = _sell(collateral, sold);
        uint256 held = IERC20Like(usdc).balanceOf(address(this));
        uint256 rest = received;
        if (owed > held) {
            // the Safe pays the loan back (its premium included) from the swap's proceeds: the flash-loan repayment
            _call(usdc, abi.encodeCall(IERC20Like.transfer, (address(this), owed - held)));
            rest = received > owed - held ? received - (owed - held) : 0;
        }
        _repay(rest);
        if (!IERC20Like(usdc).approve(pool, owed)) revert ExecutionFailed();
        (_premium, _received) = (premium, received);
        _state = 2;
        return true;
    }

    /// withdraw `amount` of collateral to the Safe, approve the router for exactly that, swap it for USDC to the
    /// Safe at no less than the oracle's value less maxSlippageBps; the USDC received
    function _sell(address collateral, uint256 amount) private returns (uint256 received) {
        _call(pool, abi.encodeWithSelector(WITHDRAW, collateral, amount, safe));
        uint256 minOut = _minOut(collateral, amount);
        uint256 before = IERC20Like(usdc).balanceOf(safe);
        _call(collateral, abi.encodeCall(IERC20Like.approve, (router, amount)));
        _call(
            router,
            abi.encodeCall(
                ISwapRouter02.exactInputSingle,
                (ISwapRouter02.ExactInputSingleParams({
                    tokenIn: collateral,
                    tokenOut: usdc,
                    fee: poolFee,
                    recipient: safe,
                    amountIn: amount,
                    amountOutMinimum: minOut,
                    sqrtPriceLimitX96: 0
                }))
            )
        );
        received = IERC20Like(usdc).balanceOf(safe) - before;
        if (received < minOut) revert SlippageAboveOracle(received, minOut);
    }

    /// the least USDC a sale of `amount` of collateral may bring: its oracle value less maxSlippageBps
    function _minOut(address collateral, uint256 amount) private view returns (uint256) {
        return (_toUsdc(collateral, amount) * (10_000 - maxSlippageBps)) / 10_000;
    }

    /// repay up to `amount` of the Safe's variable USDC debt from the Safe's own USDC; no allowance stays
    function _repay(uint256 amount) private {
        if (amount == 0) return;
        (, uint256 debt,,,,) = IAavePool(pool).getUserAccountData(safe);
        if (debt == 0) return;
        _call(usdc, abi.encodeCall(IERC20Like.approve, (pool, amount)));
        _call(pool, abi.encodeWithSelector(REPAY, usdc, amount, VARIABLE, safe));
        if (IERC20Like(usdc).allowance(safe, pool) != 0) _call(usdc, abi.encodeCall(IERC20Like.approve, (pool, 0)));
    }

    /// one plain call from the Safe (value 0, never delegatecall); a failure reverts with the call's own reason
    function _call(address to, bytes memory data) private {
        (bool ok, bytes memory reason) = ISafeModuleHost(safe).execTransactionFromModuleReturnData(to, 0, data, CALL);
        if (ok) return;
        if (reason.length == 0) revert ExecutionFailed();
        assembly {
            revert(add(reason, 32), mload(reason))
        }
    }

    function _noAllowance(address token, address holder, address spender) private view {
        uint256 left = IERC20Like(token).allowance(holder, spender);
        if (left != 0) revert ApprovalLeftBehind(token, spender, left);
    }

    function _ltv(uint256 collateral, uint256 debt) private pure returns (uint256) {
        if (debt == 0) return 0;
        if (collateral == 0) return type(uint256).max;
        return (debt * 10_000) / collateral;
    }

    /// `amount` of `token` in Aave's base currency at its oracle price
    function _value(address token, uint256 amount) private view returns (uint256) {
        return (amount * IAaveOracle(oracle).getAssetPrice(token)) / (10 ** IERC20Like(token).decimals());
    }

    /// `amount` of `token` in USDC units at the oracle's prices
    function _toUsdc(address token, uint256 amount) private view returns (uint256) {
        uint256 usdcPrice = IAaveOracle(oracle).getAssetPrice(usdc);
        return (amount * IAaveOracle(oracle).getAssetPrice(token) * (10 ** IERC20Like(usdc).decimals()))
            / (usdcPrice * (10 ** IERC20Like(token).decimals()));
    }
}
